package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The homework's MySQL under faults: created, filled with rows, maybe given
// a new password, deleted (the backup before delete), created again (the
// restore). No row is lost, whatever strikes: the operator, the Jobs'
// scripts, the server pod, the API server, the watches killed, the data or
// backup volume deleted. Ready after the restore means the rows are there,
// and after a password change that the new password logs in.
func mysqlScenario(r *run) {
	const (
		mysql  = "mysql/mysql-instance"
		backup = "backup-mysql-instance-pvc"
		data   = "mysql-instance-pvc"
	)
	sample, err := os.ReadFile(filepath.Join(suite.Root, "operators/mysql-backup/config/samples/mysql-instance.yaml"))
	if err != nil {
		r.t.Fatal(err)
	}
	password := "otuspassword"
	labels := "app: mysql-instance\n    app.kubernetes.io/name: mysql\n    app.kubernetes.io/instance: mysql-instance"
	r.apply(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: mysql-instance-notes
  labels:
    %s
data:
  note: not the operator's
---
apiVersion: v1
kind: Secret
metadata:
  name: mysql-instance-spare
  labels:
    %s
stringData:
  password: not the operator's either
`, labels, labels))
	others := r.bystanders("configmap/mysql-instance-notes", "secret/mysql-instance-spare")
	sql := func(q string) string {
		r.t.Helper()
		out, err := r.exec("deploy/mysql-instance", []string{"ERROR 2002", "ERROR 2003", "ERROR 2013"},
			"mysql", "-u", "root", "-p"+password, "--batch", "--skip-column-names", "-e", q, "otus-database")
		if err != nil {
			r.t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	server := deletePods("the server pod", "app=mysql-instance")
	volume := func(claim string) fault {
		return deleteClaim(func(*run) string { return claim })
	}
	common := r.common()

	r.step("create", 20*time.Second, append(common, server, volume(data), killScript("restore.sh")), func() {
		r.apply(string(sample))
	})
	r.readyOrAdvised(mysql, data, 6*time.Minute)

	// Rows that compress little, 2^12 to 2^17 of them, so that the dump
	// takes from a moment to seconds. sql runs a statement again when the
	// connection to the server was lost, which may be after the statement
	// ran (soak seed 985297611: "Table 'f' already exists"): the table is
	// made only if it is not there, and what is checked later is what the
	// table holds once written, counted below, however many rows a
	// statement run twice added.
	doublings := 12 + r.rng.IntN(6)
	sql("CREATE TABLE IF NOT EXISTS f (id int auto_increment primary key, pad char(64) not null); INSERT INTO f (pad) VALUES (SHA2(RAND(), 256));")
	for range doublings {
		sql("INSERT INTO f (pad) SELECT SHA2(CONCAT(pad, RAND()), 256) FROM f;")
	}
	rows, sum := sql("SELECT COUNT(*) FROM f;"), sql("SELECT SUM(CRC32(pad)) FROM f;")
	r.logf("wrote %s rows (sum of CRC32 %s)", rows, sum)

	if r.rng.IntN(2) == 0 {
		next := fmt.Sprintf("pw-%d", r.rng.IntN(1_000_000))
		if r.deleting("pvc", data) {
			// The create step's fault asked for the data volume's
			// deletion, which waits for the server's pod: its rows go
			// when that pod stops, so the operator applies no change to
			// the server, says so (Degraded) and advises deleting the
			// MySQL first, which backs them up. A person follows that
			// advice: the delete step below.
			if _, reason, msg := r.readiness(mysql); reason != "DataVolumeDeleted" || !strings.Contains(msg, "Delete the MySQL to back it up first") {
				r.t.Errorf("the data volume is being deleted under the server, and Degraded says %s: %s", reason, msg)
			}
			r.logf("the data volume is being deleted: no password change, the MySQL is deleted first, as Degraded advises")
		} else {
			r.step("password change", 15*time.Second, append(common, server, killScript("password.sh")), func() {
				r.must("patch", "-n", r.ns, mysql, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"password":%q}}`, next))
			})
			r.wait(mysql, 6*time.Minute)
			// Ready on the new generation means the new password logs in.
			password = next
			if got := sql("SELECT COUNT(*) FROM f;"); got != rows {
				r.t.Fatalf("after the password change the table has %s rows, want %s", got, rows)
			}
		}
	}

	// The backup volume, while the MySQL is still there: its backup before
	// delete must cost no row. Once the MySQL is gone, the volume holds
	// the only copy of the rows, and deleting it is a person's doing that
	// no operator can undo (soak seed 269246652).
	backupWhileDeleting := deleteClaim(func(r *run) string {
		if r.must("get", "-n", r.ns, mysql, "--ignore-not-found", "-o", "name") == "" {
			return ""
		}
		return backup
	})
	deleteFaults := append(common, volume(data), backupWhileDeleting, killScript("backup.sh", "verify.sh"))
	if !r.deleting("pvc", data) {
		// Not while the data volume is being deleted: deleting the server
		// pod then would let the volume go with the only copy of the rows,
		// a person's doing that no operator can undo.
		deleteFaults = append(deleteFaults, server)
	}
	deleted := r.step("delete", 20*time.Second, deleteFaults, func() {
		r.must("delete", "-n", r.ns, mysql, "--wait=false")
	})
	r.waitGone(mysql, 8*time.Minute)

	again := strings.Replace(string(sample), "password: otuspassword", "password: "+password, 1)
	what := r.step("create again", 20*time.Second, append(common, server, volume(backup), killScript("restore.sh")), func() {
		r.apply(again)
	})
	if (what == "pvc/"+backup+" deleted" || deleted == "pvc/"+backup+" deleted") && r.unread(mysql) {
		// Deleted before the restore read it (in this step, or in the
		// last as the MySQL went, and kept by the restore's pod since):
		// the backups are on no server. The MySQL says so, and how to
		// keep them, and keeps them.
		msg := r.must("get", "-n", r.ns, mysql, "-o", `jsonpath={.status.conditions[?(@.type=="Degraded")].message}`)
		if !strings.Contains(msg, "Retain") {
			r.t.Errorf("the backup volume went before the restore read it, and Degraded does not say how to keep the backups: %s", msg)
		}
		time.Sleep(10 * time.Second)
		if phase := r.must("get", "-n", r.ns, "pvc", backup, "-o", "jsonpath={.status.phase}"); phase != "Bound" {
			r.t.Errorf("the backup volume that holds the only backup is %q, not kept", phase)
		}
		r.logf("the backup volume was deleted before the restore read it: the MySQL is Degraded and keeps it, as it says")
		r.checkUntouched(others)
		return
	}
	r.readyOrAdvised(mysql, data, 8*time.Minute)
	// Ready means restored: read at once, not eventually.
	if got, gotSum := sql("SELECT COUNT(*) FROM f;"), sql("SELECT SUM(CRC32(pad)) FROM f;"); got != rows || gotSum != sum {
		r.t.Errorf("the MySQL created again is Ready with %s rows (sum %s), want %s (sum %s)", got, gotSum, rows, sum)
	}
	r.checkUntouched(others)
}

// deleting reports whether the API server holds kind/name as being
// deleted (a finalizer, such as a volume's in-use protection, keeps it).
func (r *run) deleting(kind, name string) bool {
	r.t.Helper()
	return r.must("get", "-n", r.ns, kind, name, "--ignore-not-found", "-o", "jsonpath={.metadata.deletionTimestamp}") != ""
}

// unread waits, for at most 8 minutes, until the MySQL is Ready for its
// spec or Degraded because its backup volume is being deleted before the
// restore read it, and reports the second.
func (r *run) unread(mysql string) bool {
	r.t.Helper()
	for end := time.Now().Add(8 * time.Minute); time.Now().Before(end); time.Sleep(2 * time.Second) {
		// Unread, or read, restored, and not serving yet: the message
		// tells which.
		ready, reason, msg := r.readiness(mysql)
		if ready {
			return false
		}
		if reason == "BackupVolumeDeleted" && strings.Contains(msg, "restore read it") {
			return true
		}
	}
	r.explain()
	r.t.Fatalf("%s neither Ready nor Degraded for its backup volume 8 minutes after it was deleted", mysql)
	return false
}

// readyOrAdvised waits, bounded by within, for the MySQL to be Ready for its
// spec. A server pod killed while it initialised its data directory leaves
// it broken (the official image's entrypoint, and the stand-in's, skip an
// initialisation that began): the server never gets ready, and the MySQL,
// whose data volume no restore finished on, says so (Degraded, within
// serverReadyLimit) and that deleting that volume loses nothing. A person
// follows that advice, once; nothing else.
func (r *run) readyOrAdvised(mysql, data string, within time.Duration) {
	r.t.Helper()
	advised := false
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(2 * time.Second) {
		ready, _, msg := r.readiness(mysql)
		if ready {
			return
		}
		if advised || !strings.Contains(msg, "No restore finished on its data volume") {
			continue
		}
		r.logf("a person follows the advice of Degraded: %s", msg)
		tally.add(r.scenario + ": a person followed the advice")
		r.must("delete", "pvc", "-n", r.ns, data, "--wait=false")
		advised = true
	}
	status, _ := suite.Run(r.ctx, "kubectl", "get", "-n", r.ns, mysql, "-o", "jsonpath={.status}")
	r.explain()
	r.t.Fatalf("%s not Ready within %s of the fault's end\nstatus: %s", mysql, within, status)
}

// readiness reads, in one request, whether what is Ready for its spec and
// the reason and message of its Degraded condition.
func (r *run) readiness(what string) (ready bool, reason, message string) {
	out, err := r.try(time.Minute, "get", "-n", r.ns, what, "-o", `jsonpath={.metadata.generation}|`+
		`{.status.conditions[?(@.type=="Ready")].observedGeneration}|{.status.conditions[?(@.type=="Ready")].status}|`+
		`{.status.conditions[?(@.type=="Degraded")].reason}|{.status.conditions[?(@.type=="Degraded")].message}`)
	f := strings.SplitN(out, "|", 5)
	if err != nil || len(f) < 5 {
		return false, "", ""
	}
	return f[0] == f[1] && f[2] == "True", f[3], f[4]
}
