"""The DLM drivers, one module each: in-process (memory), and tooz's Redis, etcd3,
ZooKeeper, memcached and file drivers over the shared tooz coordinator (common).
inspector.coordination.backends maps each URL scheme to its driver's class."""
