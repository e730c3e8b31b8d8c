import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type BackupSpec, BackupSpecDefaults } from '../api/generated.ts';
import { isNotFound } from '../kube/errors.ts';
import { s3Store } from '../s3/store.ts';
import type { Compression } from './compression.ts';
import { checkKey } from './encryption.ts';
import { ConfigurationError } from './errors.ts';
import type { ObjectStore } from './object-store.ts';

/** The BackupStore struct (API.md), as the CRDs generate it. */
export type BackupStoreSpec = NonNullable<BackupSpec['store']>;

export type ResolvedStore = {
  store: ObjectStore;
  prefix: string;
  compression: Compression;
  /** Present when the store encrypts client-side. */
  encryption?: { key: Buffer; secretName: string };
};

const CREDENTIAL_KEYS = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;

/** A Secret's data, decoded; undefined when it does not exist. Only `get`: never list or watch. */
export const readSecret = async (kube: KubeConfig, namespace: string, name: string) => {
  try {
    const s = await kube.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name });
    return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
};

/**
 * A BackupStore made usable: the S3 client with the credentials of the Secret it names (in the
 * Backup's namespace), and the encryption key of its encryption Secret. Whatever is missing or
 * malformed is a ConfigurationError that names the Secret and the fix; no secret value ever
 * appears in a message.
 */
export const resolveStore = (o: {
  kube: KubeConfig;
  namespace: string;
  spec: BackupStoreSpec;
  /** Deleting and aborting need no encryption key: a lost key must not keep objects forever. */
  withoutKey?: boolean;
  onAbortFailed?: (key: string, error: unknown) => void;
}): Promise<ResolvedStore> =>
  resolveStoreWith({ ...o, readSecret: (name) => readSecret(o.kube, o.namespace, name) });

/**
 * The same from Secrets read another way: a pod that mounts them as files (an etcd member's
 * restore step) has no API access. `readSecret` gives a Secret's data, undefined when it is absent.
 */
export const resolveStoreWith = async (o: {
  namespace: string;
  spec: BackupStoreSpec;
  readSecret: (name: string) => Promise<Record<string, Buffer> | undefined>;
  withoutKey?: boolean;
  onAbortFailed?: (key: string, error: unknown) => void;
}): Promise<ResolvedStore> => {
  const { s3 } = o.spec;
  const credsName = s3.credentialsSecret.name;
  const creds = await o.readSecret(credsName);
  if (!creds)
    throw new ConfigurationError(
      'CredentialsSecretNotFound',
      `Secret ${credsName} (store.s3.credentialsSecret) does not exist in namespace ${o.namespace}: create it with keys ${CREDENTIAL_KEYS.join(' and ')}`,
    );
  const missing = CREDENTIAL_KEYS.filter((k) => !creds[k]?.length);
  if (missing.length > 0)
    throw new ConfigurationError(
      'CredentialsSecretIncomplete',
      `Secret ${credsName} (store.s3.credentialsSecret) has no ${missing.join(' and no ')}: add ${missing.length > 1 ? 'them' : 'it'} to the Secret`,
    );

  let encryption: ResolvedStore['encryption'];
  const encName = o.spec.encryption?.secretName ?? '';
  if (encName && !o.withoutKey) {
    const enc = await o.readSecret(encName);
    if (!enc)
      throw new ConfigurationError(
        'EncryptionSecretNotFound',
        `Secret ${encName} (store.encryption.secretName) does not exist in namespace ${o.namespace}: create it with the 32-byte key under key "key"`,
      );
    const key = enc.key;
    if (!key?.length)
      throw new ConfigurationError(
        'EncryptionKeyMissing',
        `Secret ${encName} (store.encryption.secretName) has no key "key": add the 32-byte AES-256 key under "key"`,
      );
    encryption = { key: checkKey(key, `Secret ${encName} key "key"`), secretName: encName };
  }

  const store = s3Store({
    bucket: s3.bucket,
    region: s3.region ?? 'us-east-1',
    ...(s3.endpoint ? { endpoint: s3.endpoint } : {}),
    forcePathStyle: s3.forcePathStyle ?? false,
    credentials: {
      // A Secret made with --from-file often ends in a newline; keys never contain whitespace.
      accessKeyId: String(creds.AWS_ACCESS_KEY_ID).trim(),
      secretAccessKey: String(creds.AWS_SECRET_ACCESS_KEY).trim(),
    },
    credentialsName: credsName,
    serverSideEncryption: s3.serverSideEncryption ?? '',
    ...(o.onAbortFailed ? { onAbortFailed: o.onAbortFailed } : {}),
  });
  return {
    store,
    prefix: s3.prefix ?? '',
    compression: o.spec.compression ?? BackupSpecDefaults.store.compression,
    ...(encryption ? { encryption } : {}),
  };
};
