package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons every operator gives where the meaning is the same.
const (
	// ReasonUpToDate: Progressing is False, nothing is left to carry out.
	ReasonUpToDate = "UpToDate"
	// ReasonNoProblem: Degraded is False.
	ReasonNoProblem = "NoProblem"
	// ReasonPaused: the spec asks the operator to change nothing for now.
	ReasonPaused = "Paused"
)

// waitingForAPerson is Progressing's message while a pass is Blocked.
const waitingForAPerson = "waiting for a person to act: see Degraded"

// Report is a condition's reason and message.
type Report struct {
	Reason, Message string
}

// Observed is what one pass found, as Ready, Progressing and Degraded say
// it. Every pass of every operator sets the three from one Observed with
// Summarize, so that none of them keeps what an earlier pass found.
type Observed struct {
	// Ready: the spec is carried out and the object serves it. Report
	// says what serves, or what is not ready yet and why.
	Ready bool
	Report
	// Work, when its Reason is set, is work under way: Progressing says it.
	// A pass that is neither Ready nor Blocked is working towards Report
	// when Work is unset.
	Work Report
	// Problem, when its Reason is set, is what a person should fix:
	// Degraded says it, while the rest goes on unless Blocked.
	Problem Report
	// Blocked: nothing moves on until a person acts on Problem, so
	// Progressing is False.
	Blocked bool
	// Held, when its Reason is set, is why nothing moves though nothing is
	// wrong (the spec pauses the operator): Progressing is False with it.
	Held Report
}

// With returns o with what err, the error that ended the pass, says for the
// conditions (Reported): a *Blocked becomes the Problem the pass is blocked
// on, a *Waiting the Work under way; either is also Ready's report when o
// is not Ready. Any other error leaves o as it is.
func (o Observed) With(err error) Observed {
	reason, msg, blocked, ok := Reported(err)
	if !ok {
		return o
	}
	r := Report{Reason: reason, Message: msg}
	if blocked {
		o.Problem, o.Blocked = r, true
	} else {
		o.Work = r
	}
	if !o.Ready {
		o.Report = r
	}
	return o
}

// Summarize sets Ready, Progressing and Degraded in conds from o, each
// stamped with generation. It returns whether conds changed.
func Summarize(conds *[]metav1.Condition, generation int64, o Observed) bool {
	changed := false
	set := func(typ string, status bool, r Report) {
		s := metav1.ConditionFalse
		if status {
			s = metav1.ConditionTrue
		}
		changed = Set(conds, generation, typ, s, r.Reason, "%s", r.Message) || changed
	}
	set(Ready, o.Ready, o.Report)
	problem := o.Problem
	if problem.Reason == "" && o.Blocked {
		problem = o.Report
	}
	switch {
	case o.Blocked:
		set(Progressing, false, Report{Reason: problem.Reason, Message: waitingForAPerson})
	case o.Held.Reason != "":
		set(Progressing, false, o.Held)
	case o.Work.Reason != "":
		set(Progressing, true, o.Work)
	case !o.Ready:
		set(Progressing, true, o.Report)
	default:
		set(Progressing, false, Report{Reason: ReasonUpToDate, Message: "up to date"})
	}
	if problem.Reason != "" {
		set(Degraded, true, problem)
	} else {
		set(Degraded, false, Report{Reason: ReasonNoProblem, Message: "no problem found"})
	}
	return changed
}
