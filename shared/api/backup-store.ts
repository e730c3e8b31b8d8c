import type { SchemaBlock } from './cel-blocks.ts';

const objectName = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
  description: 'Name of the object in the same namespace.',
};

/**
 * The BackupStore struct (API.md), once: `npm run gen:api` writes it into every CRD that embeds
 * it (Backup.spec.store, RedisCluster.spec.backup.store, BackupSchedule.spec.template.store,
 * Restore.spec.source.s3.store), between `# generated:store` markers; the drift test fails when
 * one of them differs. Change it here, then run `npm run gen:api`.
 */
export const BACKUP_STORE_SCHEMA = {
  node: {
    type: 'object',
    description:
      'Where backups are kept: an S3-compatible bucket, with compression and optional client-side encryption.',
    required: ['s3'],
    properties: {
      s3: {
        type: 'object',
        required: ['bucket', 'credentialsSecret'],
        properties: {
          bucket: {
            type: 'string',
            minLength: 3,
            maxLength: 63,
            pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
            description: 'Bucket name (S3 naming rules).',
          },
          prefix: {
            type: 'string',
            maxLength: 512,
            default: '',
            description: 'Key prefix inside the bucket.',
          },
          region: { type: 'string', maxLength: 64, default: 'us-east-1' },
          endpoint: {
            type: 'string',
            maxLength: 512,
            description: 'URL of an S3-compatible server; empty for AWS.',
            'x-kubernetes-validations': [
              {
                rule: "self == '' || self.startsWith('http://') || self.startsWith('https://')",
                message: 'endpoint must be an http:// or https:// URL, or empty for AWS S3',
              },
            ],
          },
          forcePathStyle: { type: 'boolean', default: false },
          credentialsSecret: {
            type: 'object',
            description: 'Secret with keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.',
            required: ['name'],
            properties: { name: objectName },
          },
          serverSideEncryption: { type: 'string', enum: ['', 'AES256', 'aws:kms'], default: '' },
        },
      },
      compression: { type: 'string', enum: ['zstd', 'gzip', 'none'], default: 'zstd' },
      encryption: {
        type: 'object',
        description: 'Client-side AES-256-GCM; the key is the Secret key `key`.',
        properties: { secretName: { type: 'string', maxLength: 253, default: '' } },
      },
    },
  },
} as const satisfies SchemaBlock;
