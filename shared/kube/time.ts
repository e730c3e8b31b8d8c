/** RFC 3339 to the second, as Kubernetes writes times (metav1.Time has no fractions). */
export const rfc3339 = (t: Date) => t.toISOString().replace(/\.\d{3}Z$/, 'Z');
