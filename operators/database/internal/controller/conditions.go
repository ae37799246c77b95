package controller

// Reasons of the Ready, Progressing and Degraded conditions.
const (
	ReasonRunning         = "Running"
	ReasonPodPending      = "PodPending"
	ReasonPodNotReady     = "PodNotReady"
	ReasonPodTerminating  = "PodTerminating"
	ReasonPortPending     = "NodePortPending"
	ReasonNameConflict    = "NameConflict"
	ReasonSecretNotFound  = "SecretNotFound"
	ReasonSecretKeyAbsent = "SecretKeyMissing"
	ReasonReconciled      = "Reconciled"
)
