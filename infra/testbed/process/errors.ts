/** A server of the test bed failed to start or become ready. Not retryable: its log says why. */
export class ProcessStartError extends Error {
  override readonly name = 'ProcessStartError';
  readonly retry = false;
  readonly logFile: string | undefined;

  constructor(message: string, logFile?: string, options?: ErrorOptions) {
    super(logFile ? `${message} (log: ${logFile})` : message, options);
    this.logFile = logFile;
  }
}
