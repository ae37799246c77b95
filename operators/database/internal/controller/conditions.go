package controller

import (
	"github.com/operator-workshops/workshop/operators/common/conditions"
	"github.com/operator-workshops/workshop/operators/common/secrets"
)

// Reasons of the Ready, Progressing and Degraded conditions.
const (
	ReasonRunning         = "Running"
	ReasonPodPending      = "PodPending"
	ReasonPodNotReady     = "PodNotReady"
	ReasonPodTerminating  = "PodTerminating"
	ReasonPortPending     = "NodePortPending"
	ReasonNameConflict    = conditions.ReasonNameConflict
	ReasonSecretNotFound  = secrets.ReasonSecretNotFound
	ReasonSecretKeyAbsent = secrets.ReasonSecretKeyMissing
	// ReasonPasswordLost: the generated Secret of a running server was
	// deleted.
	ReasonPasswordLost = "PasswordLost"
)
