import { describe, expect, it } from 'vitest';
import { podTemplateOf } from './template.ts';

describe('a member pod’s template', () => {
  it('changes with the image or the resources, not with the order of their keys', () => {
    const base = podTemplateOf({
      spec: { version: '3.6', resources: { limits: { cpu: '1', memory: '1Gi' } } },
    });
    expect(
      podTemplateOf({ spec: { version: '3.6', resources: { limits: { memory: '1Gi', cpu: '1' } } } }),
    ).toBe(base);
    expect(
      podTemplateOf({ spec: { version: '3.6', resources: { limits: { cpu: '2', memory: '1Gi' } } } }),
    ).not.toBe(base);
    expect(
      podTemplateOf({ spec: { version: '3.5', resources: { limits: { cpu: '1', memory: '1Gi' } } } }),
    ).not.toBe(base);
    // No resources and empty resources are the same template.
    expect(podTemplateOf({ spec: { version: '3.6' } })).toBe(
      podTemplateOf({ spec: { version: '3.6', resources: {} } }),
    );
  });
});
