package controller

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-workshops/workshop/operators/common/conditions"
	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// observed is what one pass saw of the server, for summarize.
type observed struct {
	// serving: the restore is done and the server answers clients through
	// its Service.
	serving bool
	// server says what the server is doing when it is not serving.
	server string
	// problem, when its reason is set, is what a person should know while
	// the rest goes on: Degraded says it (a data volume the API server
	// refused to change, one being deleted under the server).
	problem struct{ reason, message string }
	// unapplied: the problem kept part of the spec from being carried out,
	// so its generation is not observed (reconciler.Run).
	unapplied bool
	// recheck, when set, is how soon to look again without an event: when
	// a server pod not ready yet reaches serverReadyLimit.
	recheck time.Duration
	// reports are what the pass found of the MySQL's own condition types
	// (Restored, BackupSpace, PasswordChanged; BackupSucceeded while it is
	// deleted), in the order found.
	reports []metav1.Condition
	// restore is what the restore loaded, once it is done, and backup
	// where the backup before delete went, once it counts: the status
	// fields that say so.
	restore *restoreReport
	backup  *backupReport
	// measured is what the restore Job just measured of the backup
	// volume, for the data volume's marks; spaceLow, what a person should
	// know of the room it has, from those marks.
	measured room
	spaceLow *conditions.Report
}

// restoreReport is the status's word on a finished restore: the backup it
// loaded (status.restoredFrom, empty when it loaded none or did not say)
// and the workshop's status.message.
type restoreReport struct{ from, message string }

// backupReport is where a backup that counts went: status.lastBackup
// (volume/file) and lastBackupTime.
type backupReport struct {
	to   string
	when *metav1.Time
}

// report notes condition typ as the pass found it, for summarize.
func (o *observed) report(typ string, s metav1.ConditionStatus, reason, msg string) {
	o.reports = append(o.reports, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg})
}

// setReports sets the conditions and the status fields o reports.
func setReports(m *mysqlv1.MySQL, o observed) {
	for _, c := range o.reports {
		setCondition(m, c.Type, c.Status, c.Reason, c.Message)
	}
	if r := o.restore; r != nil {
		m.Status.RestoredFrom, m.Status.Message = r.from, r.message
	}
	if b := o.backup; b != nil {
		m.Status.LastBackup, m.Status.LastBackupTime = b.to, b.when
		// The workshop's message once the backup before delete counts.
		m.Status.Message = "mysql and its children resources deleted"
	}
}

// summarize is where a MySQL's conditions are set: the MySQL's own types
// as the pass found them (o.reports: what its Jobs and volumes say), then
// Ready, Progressing and Degraded derived from what this pass observed, so
// that none stays behind once its cause is gone, and from what stopped it
// early, if anything did: a person to act (Blocked) or something to wait
// for (Waiting). A failed API call leaves those three as they were; the
// pass is retried.
func summarize(m *mysqlv1.MySQL, o observed, err error) {
	setReports(m, o)
	if _, _, _, reported := conditions.Reported(err); err != nil && !reported {
		return
	}
	state := conditions.Observed{Ready: o.serving,
		Report: conditions.Report{Reason: ReasonServerStarting, Message: o.server}}
	if o.serving {
		state.Report = conditions.Report{Reason: ReasonReady, Message: fmt.Sprintf("%s answers on %s:%d", m.Name, m.Name, mysqlPort)}
	}
	switch {
	case o.problem.reason != "":
		state.Problem = conditions.Report{Reason: o.problem.reason, Message: o.problem.message}
	case o.spaceLow != nil:
		state.Problem = *o.spaceLow
	}
	conditions.Summarize(&m.Status.Conditions, m.Generation, state.With(err))
}

func setCondition(m *mysqlv1.MySQL, typ string, s metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&m.Status.Conditions, m.Generation, typ, s, reason, "%s", msg)
}

// summarizeDelete sets the conditions of a MySQL being deleted: what the
// pass found of its backup (o.reports), then Ready, Progressing and
// Degraded: it serves no more clients, whatever its server does.
func summarizeDelete(m *mysqlv1.MySQL, o observed, err error) {
	setReports(m, o)
	deleting := conditions.Observed{
		Report: conditions.Report{Reason: ReasonDeleting, Message: fmt.Sprintf("%s is being deleted", m.Name)},
		Work:   conditions.Report{Reason: ReasonDeleting, Message: "deleting the server, its volume, its Service and its credentials"},
	}
	o2 := deleting.With(err)
	o2.Report = deleting.Report
	conditions.Summarize(&m.Status.Conditions, m.Generation, o2)
}
