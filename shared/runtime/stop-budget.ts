/**
 * How a stop spends its grace period (the pod's terminationGracePeriodSeconds): draining
 * in-flight work, at most the function's timeout; then cancelling what is left (its events are
 * redelivered) and closing the bus; exiting a second before the SIGKILL would come.
 */
export const stopBudget = (graceSeconds: number, timeoutSeconds: number) => {
  const exitMs = Math.max(1000, graceSeconds * 1000 - 1000);
  return { drainMs: Math.max(0, Math.min(timeoutSeconds * 1000, exitMs - 2000)), exitMs };
};
