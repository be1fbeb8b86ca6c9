// The kernel sink: mixes bytes into the Linux random pool with the random(4) ioctls on
// /dev/random (RNDADDENTROPY, RNDRESEEDCRNG, RNDGETENTCNT), as rngd does. Adding needs
// CAP_SYS_ADMIN in the initial user namespace. See docs/health-and-sinks.md.
import { addon } from './addon.js';

/** A refused open or ioctl. `code` is the errno symbol ('EPERM', 'ENOTTY', ...). */
export interface KernelSinkError extends Error {
  code: string;
  errno: number;
  operation: string;
}

export function isKernelSinkError(e: unknown): e is KernelSinkError {
  return e instanceof Error && typeof (e as Partial<KernelSinkError>).code === 'string' && 'operation' in e;
}

/** Highest credit the kernel accepts per byte. */
export const MAX_CREDIT_BITS_PER_BYTE = 8;

export class KernelRandom {
  #handle: unknown;
  readonly path: string;

  /** Opens the device for writing (anyone may; the ioctls check privileges). Throws KernelSinkError. */
  constructor(path = '/dev/random') {
    this.path = path;
    this.#handle = addon.kernelOpen(path);
  }

  /**
   * RNDADDENTROPY: mixes `bytes` in, crediting `creditBitsPerByte` (integer 0..8) bits per
   * byte. The credit only counts before the kernel's generator is first ready; network-
   * delivered data should use 0 (mix only). Native buffers holding the bytes are wiped.
   * Returns the bits credited. Throws KernelSinkError (EPERM without CAP_SYS_ADMIN).
   */
  addEntropy(bytes: Uint8Array, creditBitsPerByte: number): number {
    return addon.kernelAddEntropy(this.#handle, bytes, creditBitsPerByte) as number;
  }

  /** RNDRESEEDCRNG: the kernel generator reseeds from the pool now (Linux >= 4.17). */
  reseedCrng(): void {
    addon.kernelReseedCrng(this.#handle);
  }

  /** RNDGETENTCNT: the pool's entropy count in bits (256 at all times once ready, on Linux >= 5.18). */
  entropyCount(): number {
    return addon.kernelEntropyCount(this.#handle) as number;
  }

  close(): void {
    addon.kernelClose(this.#handle);
  }
}

/** The running kernel's release string (uname -r). */
export function kernelRelease(): string {
  return addon.kernelRelease() as string;
}

/**
 * Whether the pool still wakes writers when it runs low (Linux < 5.18). On newer kernels
 * poll(POLLOUT) on /dev/random never fires once the generator is ready, so a feeder must
 * be timer-driven.
 */
export function poolWakesWriters(): boolean {
  return addon.kernelPoolWakesWriters() as boolean;
}
