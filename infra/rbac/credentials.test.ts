import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadServerless } from '../../shared/runtime/config.ts';
import { requireRoles } from './credentials.ts';

const SERVERLESS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'serverless.yml');

describe('requireRoles', () => {
  it('lets every function of serverless.yml start: each has its roles', async () => {
    const fns = Object.keys((await loadServerless(SERVERLESS)).functions);
    expect(fns.length).toBeGreaterThan(5);
    expect(() => requireRoles(fns)).not.toThrow();
  });

  it('refuses a function without infra/rbac/<fn>.yaml, naming the file', () => {
    expect(() => requireRoles(['health', 'no-such-function'])).toThrow(
      /function no-such-function has no roles: infra\/rbac\/no-such-function\.yaml is missing/,
    );
  });
});
