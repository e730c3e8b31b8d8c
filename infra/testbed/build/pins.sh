# Pinned versions of everything the test bed builds. Changing a pin rebuilds that component.
KUBERNETES_VERSION=v1.35.4
ETCD_VERSION=v3.6.16
# The test bed holds etcd's official image at ETCD_VERSION and at this older minor (the newest
# v3.5 the Go module proxy serves), for EtcdCluster's upgrade tests (image-table/etcd.ts). Both
# are also the tags in image-table/etcd-images.ts (a unit test keeps them equal).
ETCD35_VERSION=v3.5.35
NATS_VERSION=v2.12.4
VERSITYGW_VERSION=v1.8.0
# helm is built with the rest (the chart's tests use it). KEDA only when asked for (ensure.ts,
# ensureKeda; slow to build); its CRDs come from the same module, without building it.
HELM_VERSION=v3.22.0
KEDA_VERSION=v2.21.0
