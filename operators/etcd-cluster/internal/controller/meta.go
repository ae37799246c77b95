package controller

// Names of what the operator writes on objects, in one place.
const (
	// appName is the app.kubernetes.io/name of every child.
	appName = "etcd"
	// FieldOwner is the server-side apply field manager and the source of
	// the events the operator records.
	FieldOwner = "etcd-cluster-operator"

	// The labels the coreos operator put on member pods, which the workshop
	// selects on: kubectl get po -l etcd_cluster=example-etcd-cluster.
	appLabel     = "app"
	appValue     = "etcd"
	clusterLabel = "etcd_cluster"

	// memberIDLabel holds, in hex, the etcd ID of the member a pod runs or
	// a volume holds the data of. A volume labelled with another ID than the
	// member of its name is left from a removed member: etcd would start it
	// as that member, which the cluster refuses.
	memberIDLabel = "etcd.database.coreos.com/member-id"

	// servedAnnotation marks the cluster's peer Service once its members
	// first answered with a quorum: from then on its data is in its
	// members' volumes, and nothing may start it empty again. The mark is
	// on an object the cluster owns, not in its status, which anyone with
	// the right to write status could change.
	servedAnnotation = "etcd.database.coreos.com/served"

	// clientPort and peerPort are etcd's well-known ports.
	clientPort = 2379
	peerPort   = 2380
	// dataMount is where a member's volume is mounted; etcd's data directory
	// is a folder in it, so the volume's lost+found does not bother etcd.
	dataMount = "/var/run/etcd"
	dataDir   = dataMount + "/default.etcd"
)

// clientServiceName is the client Service of cluster name, as coreos named it.
func clientServiceName(cluster string) string { return cluster + "-client" }

// volumeName is the PersistentVolumeClaim of member name.
func volumeName(member string) string { return "data-" + member }
