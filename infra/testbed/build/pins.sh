# Pinned versions of everything the test bed builds. Changing a pin rebuilds that component.
KUBERNETES_VERSION=v1.35.4
ETCD_VERSION=v3.6.16
NATS_VERSION=v2.12.4
VERSITYGW_VERSION=v1.8.0
