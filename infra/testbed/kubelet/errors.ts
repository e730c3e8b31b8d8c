/** A container's image cannot be had: not held, not in the image table, or its archive is unusable. */
export class ImagePullError extends Error {
  override readonly name = 'ImagePullError';
  readonly retry = true; // the archive may be loaded later, as an image may be pushed later
}
