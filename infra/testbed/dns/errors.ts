/** A DNS message (or a name in one) that does not follow RFC 1035. Sending it again will not help. */
export class DnsFormatError extends Error {
  override readonly name = 'DnsFormatError';
  readonly retry = false;
}

/** The cluster DNS could not start: its address is taken, or the API server did not answer in time. */
export class ClusterDnsStartError extends Error {
  override readonly name = 'ClusterDnsStartError';
  readonly retry: boolean;

  constructor(message: string, retry: boolean, options?: ErrorOptions) {
    super(message, options);
    this.retry = retry;
  }
}
