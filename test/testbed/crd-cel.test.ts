import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bed, createNamespace, until } from '../support/bed.ts';

const GROUP = 'testbed.tideway.dev';

describe('API server: CRDs with structural schemas and CEL rules', () => {
  const b = bed();
  let ns = '';

  beforeAll(async () => {
    ns = await createNamespace(b.core, 'crd');
    await b.apiext.createCustomResourceDefinition({
      body: {
        metadata: { name: `widgets.${GROUP}` },
        spec: {
          group: GROUP,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: {
                      type: 'object',
                      properties: { min: { type: 'integer' }, max: { type: 'integer' } },
                      x_kubernetes_validations: [
                        { rule: 'self.min <= self.max', message: 'min must not exceed max' },
                      ],
                    },
                  },
                },
              },
            },
          ],
        },
      },
    });
    await until('CRD established', async () => {
      const crd = await b.apiext.readCustomResourceDefinition({ name: `widgets.${GROUP}` });
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
        ? true
        : undefined;
    });
  });

  afterAll(async () => {
    await b.apiext.deleteCustomResourceDefinition({ name: `widgets.${GROUP}` });
    await b.core.deleteNamespace({ name: ns });
  });

  const create = (name: string, spec: object) =>
    b.custom.createNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      namespace: ns,
      plural: 'widgets',
      body: { apiVersion: `${GROUP}/v1`, kind: 'Widget', metadata: { name }, spec },
    });

  it('accepts a valid object', async () => {
    const created = (await create('ok', { min: 1, max: 2 })) as { metadata: { uid: string } };
    expect(created.metadata.uid).toBeTruthy();
  });

  it("refuses an invalid one with the rule's message", async () => {
    const error = await create('bad', { min: 3, max: 2 }).catch((e: unknown) => e);
    expect(String((error as { body?: string }).body ?? error)).toContain('min must not exceed max');
  });
});
