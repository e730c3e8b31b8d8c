/**
 * The official etcd images EtcdCluster names by default, one per minor version it runs (its
 * upgrade goes from the older to the newer): the product's own list (shared/etcdcluster), which
 * the test bed must hold. A unit test keeps it equal to the versions pinned in pins.sh.
 */
import { ETCD_IMAGES } from '../../../shared/etcdcluster/names.ts';

export { ETCD_IMAGES };

/** The newest: what an EtcdCluster runs unless it names an image. */
export const ETCD_DEFAULT_IMAGE = ETCD_IMAGES['3.6'];
