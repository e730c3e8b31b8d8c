/**
 * The official etcd images EtcdCluster names by default, one per minor version it runs (its
 * upgrade goes from the older to the newer). The test bed holds both (see etcd.ts), built from
 * the versions pinned in infra/testbed/build/pins.sh; a unit test keeps the two lists equal.
 * Plain data with no imports, so that any layer can use it.
 */
export const ETCD_IMAGES = {
  '3.5': 'gcr.io/etcd-development/etcd:v3.5.35',
  '3.6': 'gcr.io/etcd-development/etcd:v3.6.16',
} as const;

export type EtcdMinor = keyof typeof ETCD_IMAGES;

/** The newest: what an EtcdCluster runs unless it names an image. */
export const ETCD_DEFAULT_IMAGE = ETCD_IMAGES['3.6'];
