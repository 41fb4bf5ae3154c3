import type { DeploymentSpec } from './types.js';

/**
 * RPM/TPM counted once across the hosts that share a store (router/pg/shared-limits.ts on PostgreSQL). A host
 * without one counts its own (router/routing/window.ts), which is all a single host needs.
 */
export interface SharedLimits {
  /**
   * Count one request against the deployment's shared RPM if its shared RPM and TPM leave room: false when either
   * is used up (the call goes elsewhere). One round trip; a store that fails grants (each host's own windows still
   * hold it to its limits).
   */
  claim(deployment: DeploymentSpec, nowMs: number): Promise<boolean>;
  /** The tokens an answer used, counted against the deployment's shared TPM (batched off the call's path). */
  addTokens(deploymentId: string, tokens: number): void;
}

/** A deployment whose shared count was used up is skipped without asking again for this long (then asked again). */
export const SHARED_FULL_MS = 1000;

/** Whether a deployment's picks go through the shared counts: only one with a limit costs a round trip. */
export function limited(spec: DeploymentSpec): boolean {
  return spec.rpm !== null || spec.tpm !== null;
}
