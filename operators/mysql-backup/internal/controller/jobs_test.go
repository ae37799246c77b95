package controller

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mysqlv1 "github.com/operator-workshops/workshop/operators/mysql-backup/api/v1"
)

// A Job's outcome is told once per MySQL, and what was told of a MySQL goes
// with it.
func TestToldJobs(t *testing.T) {
	var told toldJobs
	m := &mysqlv1.MySQL{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}}
	restore := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: "restore"}}
	backup := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: "backup"}}
	if !told.first(m, restore) || told.first(m, restore) {
		t.Error("a restore Job's outcome is not told exactly once")
	}
	if !told.first(m, backup) {
		t.Error("the backup Job's outcome is not told after the restore's")
	}
	told.forget(client.ObjectKeyFromObject(m))
	if len(told.jobs) != 0 {
		t.Errorf("after the MySQL is gone: %v remembered", told.jobs)
	}
}
