import type { ErrorCode } from '../../staging/PKG-KERNEL-001/HOT/kernel/catalogue/define.js';

/**
 * A coded refusal (the same shape as the kernel's CpError: code, message, hint), from built-ins only: the
 * entry checks CP_BOOTSTRAP before it trusts any of the kernel code it carries. Its codes are catalogued in
 * scripts/lib/codes.ts (the type import is erased).
 */
export class BootstrapError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint = 'this copy of CP_BOOTSTRAP is damaged or incomplete; unpack the CP_BOOTSTRAP archive again (or rebuild it with `cplane build`)',
  ) {
    super(message);
  }
}
