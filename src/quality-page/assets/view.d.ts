// Types of view.js (plain JavaScript, served to the browser as it is and imported by Node
// for the HTML report).
import type { RunView, TimelineRun } from '../view-model.js';

export function esc(value: unknown): string;
export function utc(time: number | string | null | undefined): string;
export function verdictOf(run: { status: string; error?: string | null; strict: boolean; loose: boolean }): {
  cls: 'pass' | 'warn' | 'fail' | 'error';
  icon: string;
  word: string;
  detail: string;
};
export function badge(cls: string, icon: string, word: string): string;
export interface SummaryOptions {
  title?: string;
  headingLevel?: 'h2' | 'h3';
}
export function renderSummary(run: RunView, options?: SummaryOptions): string;
export function renderTests(run: RunView, cardHeading?: string): string;
export function renderFlagged(run: RunView): string;
export function renderRun(run: RunView, options?: SummaryOptions): string;
export function renderTimeline(runs: TimelineRun[], options: { from: number; to: number; width: number; selectedId: number | null }): string;
export function renderFailing(runs: TimelineRun[]): string;
