package realnode

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// The backup volume deleted (`kubectl delete pvc backup-NAME-pvc`) at three
// points of the backup before delete, on the real node, where a claim
// being deleted goes as soon as no pod uses it, with its volume: mid-dump;
// after the dump completed, before the operator saw it; while the verify
// Job checks the dump, or after it did, before the operator counted the
// backup. Each time the MySQL, its server and its data volume stay until a
// backup counts on a volume that stays, and every row comes back in the
// MySQL created again. (Before: the dump written to the volume being
// deleted counted, the data volume went, and every row went with the
// backup volume.)
func TestBackupVolumeDeletedDuringTheBackup(t *testing.T) {
	needReal(t)
	if suite.Provider != cluster.Local {
		t.Skip("reads the volumes and stops processes on this machine's own real node")
	}
	ctx := context.Background()
	ns := namespace(ctx, t)
	sample := "operators/mysql-backup/config/samples/mysql-instance.yaml"
	const (
		mysql  = "mysql/mysql-instance"
		backup = "backup-mysql-instance-pvc"
		job    = "backup-mysql-instance-job"
		verify = "verify-mysql-instance-job"
	)
	sql := func(q string) string {
		t.Helper()
		return sampleSQL(ctx, t, ns, q)
	}
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", mysql, "--timeout=5m")
	// Rows that compress little, so that the dump takes a few seconds and
	// the verify a moment: 2^18 of 64 hexadecimal digits.
	sql("CREATE TABLE big (id int auto_increment primary key, pad char(64) not null); INSERT INTO big (pad) VALUES (SHA2(RAND(), 256));")
	for range 18 {
		sql("INSERT INTO big (pad) SELECT SHA2(CONCAT(pad, RAND()), 256) FROM big;")
	}
	rows := sql("SELECT COUNT(*) FROM big;")
	sum := sql("SELECT SUM(CRC32(pad)) FROM big;")

	dumping := func(dir string) func() bool {
		return func() bool { return len(glob(t, dir, ".backup-tmp.*")) > 0 }
	}
	deleteVolume := func() {
		t.Helper()
		suite.Kubectl(ctx, t, "delete", "pvc", "-n", ns, backup, "--wait=false")
	}
	// paused runs f with the operator stopped where it is, so that it
	// cannot see the backup Job's end, nor count the backup, until f has
	// deleted the volume.
	paused := func(f func()) {
		t.Helper()
		resume, err := suite.PauseOperator("mysql-backup")
		if err != nil {
			t.Fatal(err)
		}
		defer resume()
		f()
	}
	for _, point := range []struct {
		name   string
		inject func(t *testing.T, dir string)
	}{
		{"mid-dump", func(t *testing.T, dir string) {
			waitScript(t, ns, "backup.sh", dumping(dir))
			deleteVolume()
		}},
		{"after the dump completed, before the operator saw it", func(t *testing.T, dir string) {
			waitScript(t, ns, "backup.sh", dumping(dir))
			paused(func() {
				testenv.EventuallyWithin(t, 3*time.Minute, job+" to succeed", func(ctx context.Context) error {
					if n, _ := suite.Run(ctx, "kubectl", "get", "job", "-n", ns, job, "-o", "jsonpath={.status.succeeded}"); n != "1" {
						return fmt.Errorf("%q succeeded", n)
					}
					return nil
				})
				deleteVolume()
			})
		}},
		{"during the verify, or after it, before the backup counted", func(t *testing.T, dir string) {
			testenv.EventuallyWithin(t, 3*time.Minute, "the verify Job", func(ctx context.Context) error {
				_, err := suite.Run(ctx, "kubectl", "get", "job", "-n", ns, verify)
				return err
			})
			paused(func() {
				done := func() bool {
					n, _ := suite.Run(ctx, "kubectl", "get", "job", "-n", ns, verify, "-o", "jsonpath={.status.succeeded}")
					return n == "1"
				}
				if pid := catchScript(ns, "verify.sh", done); pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGSTOP)
					t.Logf("verify.sh (pid %d) stopped mid-check", pid)
					deleteVolume()
					_ = syscall.Kill(pid, syscall.SIGCONT)
					return
				}
				t.Logf("verify.sh was done before it could be stopped: the volume goes after the verify, before the backup counts")
				deleteVolume()
			})
		}},
	} {
		dir := volumePath(ctx, t, ns, backup)
		lost := lostEvents(ctx, t, ns)
		suite.Kubectl(ctx, t, "delete", "-n", ns, mysql, "--wait=false")
		point.inject(t, dir)
		t.Logf("%s: the backup volume was deleted", point.name)
		testenv.EventuallyWithin(t, 2*time.Minute, "a BackupVolumeLost warning", func(ctx context.Context) error {
			if n := lostEvents(ctx, t, ns); n <= lost {
				return fmt.Errorf("%d BackupVolumeLost events, as before", n)
			}
			return nil
		})
		suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", mysql, "--timeout=5m")
		if now := volumePath(ctx, t, ns, backup); now == dir {
			t.Errorf("%s: the backup went to the volume that was deleted, %s", point.name, dir)
		}
		suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
		suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", mysql, "--timeout=5m")
		if got, gotSum := sql("SELECT COUNT(*) FROM big;"), sql("SELECT SUM(CRC32(pad)) FROM big;"); got != rows || gotSum != sum {
			t.Fatalf("%s: the table came back with %s rows (sum %s), want %s (sum %s)", point.name, got, gotSum, rows, sum)
		}
	}
}

// lostEvents counts the BackupVolumeLost warnings of namespace ns.
func lostEvents(ctx context.Context, t *testing.T, ns string) int {
	t.Helper()
	out, err := suite.Run(ctx, "kubectl", "get", "events", "-n", ns, "--field-selector", "reason=BackupVolumeLost", "-o", "name")
	if err != nil {
		t.Fatalf("kubectl get events: %v", err)
	}
	return len(strings.Fields(out))
}

// catchScript returns the process ID of a Job's script named self as soon as
// one runs in a pod of ns, 0 once done (asked every second) says its Job
// is over, or after three minutes.
func catchScript(ns, self string, done func() bool) int {
	end, ask := time.Now().Add(3*time.Minute), time.Now()
	for ; time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if pid := suite.ScriptPID(context.Background(), ns, self); pid != 0 {
			return pid
		}
		if time.Now().After(ask) {
			if done() {
				return 0
			}
			ask = time.Now().Add(time.Second)
		}
	}
	return 0
}
