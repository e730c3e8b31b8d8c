import { z } from 'zod';

/** A namespace name (DNS-1123 label), as the API server accepts it. */
export const zNamespaceName = z
  .string()
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name (lower-case letters, digits, -)');
