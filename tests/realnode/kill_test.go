package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// SIGKILL at the worst moments, on the real node: the backup Job's script
// mid-dump, the restore Job's script mid-load, and the server pod replaced
// while a restore loads into it. The Jobs try again, the backup's leftover
// goes, and every row comes back.
func TestKillsDuringBackupAndRestore(t *testing.T) {
	needReal(t)
	if suite.Provider != cluster.Local {
		t.Skip("kills the Jobs' processes on this machine's own real node")
	}
	ctx := context.Background()
	ns := namespace(ctx, t)
	sample := "operators/mysql-backup/config/samples/mysql-instance.yaml"
	sql := func(q string) string {
		t.Helper()
		return sampleSQL(ctx, t, ns, q)
	}
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	// Enough rows that a dump and a load take seconds: 2^19 of 200 bytes.
	sql("CREATE TABLE big (id int auto_increment primary key, pad varchar(200) not null); INSERT INTO big (pad) VALUES (REPEAT('x', 200));")
	for range 19 {
		sql("INSERT INTO big (pad) SELECT pad FROM big;")
	}
	rows := strings.TrimSpace(sql("SELECT COUNT(*) FROM big;"))
	backupDir := volumePath(ctx, t, ns, "backup-mysql-instance-pvc")

	suite.Kubectl(ctx, t, "delete", "-n", ns, "mysql/mysql-instance", "--wait=false")
	killScript(t, ns, "backup.sh", func() bool { return len(glob(t, backupDir, ".backup-tmp.*")) > 0 })
	if len(glob(t, backupDir, ".backup-tmp.*")) == 0 {
		t.Error("the killed backup left no temporary file: it was not killed mid-dump")
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", "mysql/mysql-instance", "--timeout=5m")
	if failed := suite.Kubectl(ctx, t, "get", "job", "-n", ns, "backup-mysql-instance-job", "-o", "jsonpath={.status.failed}"); failed != "1" {
		t.Errorf("the backup Job counts %q failed pods, want the one killed", failed)
	}
	if left := glob(t, backupDir, ".backup-tmp.*"); len(left) > 0 {
		t.Errorf("the killed backup's temporary file is still there: %v", left)
	}

	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	loading := func() bool { return len(glob(t, backupDir, ".restoring-*")) > 0 }
	killScript(t, ns, "restore.sh", loading)
	// The Job's next pod loads again; the server pod is replaced under it.
	waitScript(t, ns, "restore.sh", loading)
	suite.Kubectl(ctx, t, "delete", "pods", "-n", ns, "-l", "app=mysql-instance", "--grace-period=0", "--force")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "mysql/mysql-instance", "--timeout=5m")
	if got := strings.TrimSpace(sql("SELECT COUNT(*) FROM big;")); got != rows {
		t.Errorf("after the kills the table has %s rows, want %s", got, rows)
	}
	if left := glob(t, backupDir, ".restoring-*"); len(left) > 0 {
		t.Errorf("the restore's marker is still there: %v", left)
	}
}

// volumePath is the directory on this machine of the volume bound to claim.
func volumePath(ctx context.Context, t *testing.T, ns, claim string) string {
	t.Helper()
	pv := suite.Kubectl(ctx, t, "get", "pvc", "-n", ns, claim, "-o", "jsonpath={.spec.volumeName}")
	dir := suite.Kubectl(ctx, t, "get", "pv", pv, "-o", "jsonpath={.spec.local.path}{.spec.hostPath.path}")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("volume %s of %s: %v", pv, claim, err)
	}
	return dir
}

func glob(t *testing.T, dir, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// waitScript waits until a Job's script named self runs in a pod of ns and busy says it
// is at work, and returns its process ID on this machine.
func waitScript(t *testing.T, ns, self string, busy func() bool) int {
	t.Helper()
	var pid int
	testenv.EventuallyWithin(t, 3*time.Minute, self+" at work", func(ctx context.Context) error {
		if pid = suite.ScriptPID(ctx, ns, self); pid == 0 {
			return fmt.Errorf("no %s process", self)
		}
		if !busy() {
			return fmt.Errorf("%s (pid %d) has not begun", self, pid)
		}
		return nil
	})
	return pid
}

// killScript kills a Job's script named self with SIGKILL, once it is at
// work.
func killScript(t *testing.T, ns, self string, busy func() bool) {
	t.Helper()
	pid := waitScript(t, ns, self, busy)
	if err := exec.Command("kill", "-KILL", strconv.Itoa(pid)).Run(); err != nil {
		t.Fatalf("kill -KILL %d (%s): %v", pid, self, err)
	}
	t.Logf("killed %s (pid %d) with SIGKILL", self, pid)
}
