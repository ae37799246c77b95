package realnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/operator-workshops/workshop/operators/common/testenv"
	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

// A data directory left half initialised, on the real node: its server runs
// but admits root from localhost only, as when the image's entrypoint was
// killed between removing the remote root and creating it again (a server
// pod force-deleted while it initialised lets a second one start on the
// same volume; soak seed 523641379). Its readiness probe fails from then
// on, so the restore starts on a server that runs, not on one that is
// ready (CI once saw the probe fail before the restore started: Degraded
// said ServerNotReady after 3 minutes). The restore Job, which logs in from
// its own pod, fails at once with the server's words, and Degraded advises
// deleting the data volume, on which no restore finished. A person does;
// the server's pod, which holds the volume while it runs, is deleted so
// that it goes, and the MySQL is Ready on a new volume. (Before: each try
// of the restore waited 5 minutes for a server that answered all along,
// and the volume, once deleted, stayed Terminating under the running pod.)
func TestHalfInitialisedVolumeIsReplacedOnAdvice(t *testing.T) {
	needReal(t)
	if suite.Provider != cluster.Local {
		t.Skip("holds the operator where it is, a local process on this machine")
	}
	ctx := context.Background()
	ns := namespace(ctx, t)
	const (
		mysql = "mysql/mysql-instance"
		data  = "mysql-instance-pvc"
	)
	sample := "operators/mysql-backup/config/samples/mysql-instance.yaml"
	sql := func(q string) string {
		t.Helper()
		return sampleSQL(ctx, t, ns, q)
	}
	// A backup to restore: a restore with none needs no server.
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", mysql, "--timeout=5m")
	sql("CREATE TABLE t (id int primary key); INSERT INTO t VALUES (1), (2), (3);")
	suite.Kubectl(ctx, t, "delete", "-n", ns, mysql, "--timeout=5m")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=delete", "pods", "-l", "app=mysql-instance", "--timeout=3m")

	// Created again, the operator is held as soon as it made the server
	// (kubectl wait watches for it), before the server's pod runs, so that
	// the restore does not start before the grants are broken.
	suite.Kubectl(ctx, t, "apply", "-n", ns, "-f", sample)
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=create", "deploy/mysql-instance", "--timeout=2m")
	resume, err := suite.PauseOperator("mysql-backup")
	if err != nil {
		t.Fatal(err)
	}
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", "pods", "-l", "app=mysql-instance", "--timeout=3m")
	if _, err := suite.Run(ctx, "kubectl", "get", "-n", ns, "job/restore-mysql-instance-job"); err == nil {
		resume()
		t.Fatal("the restore started before the operator was held")
	}
	// What the entrypoint leaves when killed after it removed the remote
	// accounts, before it created root@'%' again.
	sql("DELETE FROM mysql.global_priv WHERE Host <> 'localhost'; FLUSH PRIVILEGES;")
	resume()
	oldUID := suite.Kubectl(ctx, t, "get", "-n", ns, "pvc", data, "-o", "jsonpath={.metadata.uid}")

	start := time.Now()
	var msg string
	testenv.EventuallyWithin(t, 4*time.Minute, "Degraded with the advice to delete the data volume", func(ctx context.Context) error {
		out, err := suite.Run(ctx, "kubectl", "get", "-n", ns, mysql, "-o",
			`jsonpath={.status.conditions[?(@.type=="Degraded")].reason}|{.status.conditions[?(@.type=="Degraded")].message}`)
		if err != nil {
			return err
		}
		if !strings.Contains(out, "`kubectl delete pvc "+data+"`") {
			return fmt.Errorf("Degraded is %s", out)
		}
		msg = out
		return nil
	})
	t.Logf("%s after the operator went on: %s", time.Since(start).Round(time.Second), msg)
	if !strings.HasPrefix(msg, "RestoreFailed|") || !strings.Contains(msg, "is not allowed to connect") {
		t.Errorf("Degraded does not say the restore failed on the server's refusal: %s", msg)
	}

	suite.Kubectl(ctx, t, "delete", "-n", ns, "pvc", data, "--wait=false")
	suite.Kubectl(ctx, t, "wait", "-n", ns, "--for=condition=Ready", mysql, "--timeout=5m")
	if uid := suite.Kubectl(ctx, t, "get", "-n", ns, "pvc", data, "-o", "jsonpath={.metadata.uid}"); uid == oldUID {
		t.Errorf("the MySQL is Ready on the volume that was deleted")
	}
	if out := suite.Kubectl(ctx, t, "get", "events", "-n", ns, "--field-selector", "reason=ServerPodDeleted", "-o", "name"); strings.TrimSpace(out) == "" {
		t.Errorf("no ServerPodDeleted event")
	}
	if got := sql("SELECT COUNT(*) FROM t;"); got != "3" {
		t.Errorf("the MySQL on the new volume has %s rows, want the backup's 3", got)
	}
}
