package controller

// Names of what the operator writes on objects, in one place.
const (
	// appName is the app.kubernetes.io/name of every child.
	appName = "database"
	// FieldOwner is the server-side apply field manager and the source of
	// the events the operator records.
	FieldOwner = "database-operator"
	// podSpecHashAnnotation records the hash of the Pod the operator built; a
	// Pod whose hash differs from the one the spec gives now is replaced,
	// since most of a Pod's spec cannot change in place.
	podSpecHashAnnotation = "zalando.org/pod-spec-hash"
	// generatedSecretSuffix names the Secret the operator generates for a
	// mysql root password: <database>-root-password.
	generatedSecretSuffix = "-root-password"
	// defaultSecretKey is the key of the generated password in its Secret.
	defaultSecretKey = "password"
)
