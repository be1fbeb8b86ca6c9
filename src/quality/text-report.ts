// `qentropy quality report [ID]`: a stored run as NIST's finalAnalysisReport.txt (the STS
// module's formatter) under a header naming the run, or the reason an error run failed.
import { formatReport } from '../sts/report.js';
import type { BatteryResult, BatterySummary, SequenceResult, StsParams, TestName } from '../sts/types.js';

interface StoredReport {
  id?: number;
  status?: string;
  error?: string;
  source?: string;
  started?: string;
  completed?: string;
  createdAt?: string;
  layout?: { streams: number; bitsPerStream: number };
  params?: Required<StsParams>;
  tests?: TestName[];
  alpha?: number;
  criteria?: BatterySummary['criteria'];
  subTests?: BatterySummary['subTests'];
  uniformity?: BatterySummary['uniformity'];
  proportionFlags?: number;
  uniformityFlags?: number;
  repetition?: BatterySummary['repetition'];
  sequenceNotes?: { sequence: number; notes: SequenceResult['notes'] }[];
  keptBits?: number;
  timings?: { drawMs?: number; batteryMs?: number; batteryCpuMs?: number };
  min_entropy?: { samples: number; h_original: number; h_bitstring: number; assessed: number } | null;
}

/** The battery result a stored report describes (per-sequence P-values are not stored). */
function toBatteryResult(r: StoredReport): BatteryResult {
  const streams = r.layout!.streams;
  const sequences: SequenceResult[] = Array.from({ length: streams }, () => ({ tests: {} }));
  for (const { sequence, notes } of r.sequenceNotes ?? []) {
    if (sequences[sequence] && notes) sequences[sequence]!.notes = notes;
  }
  return {
    n: r.layout!.bitsPerStream,
    streams,
    params: r.params!,
    tests: r.tests ?? [],
    sequences,
    summary: {
      streams,
      alpha: r.alpha ?? 0.01,
      criteria: r.criteria!,
      subTests: r.subTests ?? [],
      uniformity: r.uniformity ?? [],
      proportionFlags: r.proportionFlags ?? 0,
      uniformityFlags: r.uniformityFlags ?? 0,
      repetition: r.repetition ?? { identical: [], periodBits: 0, flagged: false },
    },
  };
}

export function formatRunReport(report: Record<string, unknown>): string {
  const r = report as StoredReport;
  const head = [
    `qentropy quality run ${r.id ?? '?'}: ${r.status === 'error' ? 'ERROR (not a statistical result)' : 'completed'}`,
    `  source:    ${r.source ?? 'unknown'}`,
    `  started:   ${r.started ?? '?'}`,
    `  completed: ${r.completed ?? '?'}`,
  ];
  if (r.layout) head.push(`  batch:     ${r.layout.streams} sequences x ${r.layout.bitsPerStream} bits`);
  if (r.status === 'error' || !r.criteria) {
    head.push(`  error:     ${r.error ?? 'no battery result stored'}`);
    return `${head.join('\n')}\n`;
  }
  if (r.timings?.batteryMs !== undefined) {
    head.push(`  timings:   draw ${(r.timings.drawMs! / 1000).toFixed(1)} s, battery ${(r.timings.batteryMs / 1000).toFixed(1)} s (CPU ${((r.timings.batteryCpuMs ?? 0) / 1000).toFixed(1)} s)`);
  }
  if (r.min_entropy) {
    const m = r.min_entropy;
    head.push(
      `  min-entropy: ${m.assessed.toFixed(6)} bits per byte (SP 800-90B non-IID on ${m.samples} bytes: ` +
        `H_original ${m.h_original.toFixed(6)}, H_bitstring ${m.h_bitstring.toFixed(6)} per bit)`,
    );
  }
  head.push(`  kept bits: ${r.keptBits ?? 0}`, '');
  return `${head.join('\n')}\n${formatReport(toBatteryResult(r), { source: r.source ?? 'input' })}`;
}
