package controller

import "github.com/operator-workshops/workshop/operators/common/conditions"

// Reasons of the Ready, Progressing and Degraded conditions.
const (
	ReasonRunning         = "Running"
	ReasonPodPending      = "PodPending"
	ReasonPodNotReady     = "PodNotReady"
	ReasonPodTerminating  = "PodTerminating"
	ReasonPortPending     = "NodePortPending"
	ReasonNameConflict    = conditions.ReasonNameConflict
	ReasonSecretNotFound  = "SecretNotFound"
	ReasonSecretKeyAbsent = "SecretKeyMissing"
	ReasonReconciled      = "Reconciled"
)
