/** `s3://bucket/key` → key, when it is in that bucket. */
export const keyOfLocation = (location: string, bucket: string) => {
  const prefix = `s3://${bucket}/`;
  return location.startsWith(prefix) && location.length > prefix.length
    ? location.slice(prefix.length)
    : undefined;
};

/**
 * A Restore's raw S3 source's key in the bucket: `key` as given when it already starts with the
 * store's prefix (copied from a Backup's location), else under the prefix.
 */
export const s3KeyOf = (prefix: string | undefined, key: string) => {
  if (!prefix) return key;
  const dir = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return key.startsWith(dir) ? key : `${dir}${key.replace(/^\/+/, '')}`;
};
