package controller

// Names of what the operator writes on objects, in one place.
const (
	// appName is the app.kubernetes.io/name of every gordon pod.
	appName = "gordon"
	// FieldOwner is the field manager of the operator's writes and the
	// source of its events.
	FieldOwner = "gordon-operator"
	// podNamePrefix is the workshop's generateName.
	podNamePrefix = "gordon-"
	// containerName is the workshop's container name.
	containerName = "gordon"
)

// Reasons of the Ready, Progressing and Degraded conditions; a pod that
// cannot run gives the kubelet's reason (ImagePullBackOff, CrashLoopBackOff).
const (
	ReasonAllReady   = "AllPodsReady"
	ReasonScaling    = "Scaling"
	ReasonWaiting    = "WaitingForPods"
	ReasonCreateFail = "CreateFailed"
)
