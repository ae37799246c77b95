package faults

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// The zalando workshop's mysql Database under faults: its server pod
// deleted, the operator, the watches and the API server killed, a few times
// over. The password the operator generated never changes under the
// server (the same Secret, the same bytes), and Ready means the server
// takes it.
func databaseScenario(r *run) {
	const db = "database/mysql-db"
	r.apply(`apiVersion: v1
kind: Secret
metadata:
  name: mysql-db-spare
  labels:
    app.kubernetes.io/name: database
    app.kubernetes.io/instance: mysql-db
stringData:
  password: not the operator's
`)
	others := r.bystanders("secret/mysql-db-spare")
	faults := append(r.common(), deletePods("the server pod", "app.kubernetes.io/name=database,app.kubernetes.io/instance=mysql-db"))
	secret := func() string {
		r.t.Helper()
		return r.must("get", "-n", r.ns, "secret/mysql-db-root-password", "-o", "jsonpath={.metadata.uid} {.data.password}")
	}
	// loginWith checks, once Ready, that the server takes the generated
	// password (the pod's server being away for a moment aside), at once
	// unless what, the step's fault, struck just before: a pod deleted a
	// moment ago can leave Ready as it was until the operator sees it go,
	// and its replacement is still initialising (holds).
	loginWith := func(what, encoded string) {
		r.t.Helper()
		password, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			r.t.Fatalf("the Secret's password: %v", err)
		}
		r.holds(what, db, func() error {
			if _, err := r.exec("pod/mysql-db", []string{"ERROR 2002", "ERROR 2003"},
				"mysql", "-u", "root", "-p"+string(password), "-e", "select 1"); err != nil {
				return fmt.Errorf("ready, and the server refuses the generated password: %w", err)
			}
			return nil
		})
	}

	what := r.step("create", 10*time.Second, faults, func() {
		r.must("apply", "-n", r.ns, "-f", "operators/database/config/samples/mysql-db.yaml")
	})
	r.wait(db, 5*time.Minute)
	first := secret()
	_, encoded, _ := strings.Cut(first, " ")
	loginWith(what, encoded)

	for i := range 2 + r.rng.IntN(2) {
		what := r.step(fmt.Sprintf("disturb %d", i+1), 10*time.Second, faults, func() {})
		r.wait(db, 5*time.Minute)
		if now := secret(); now != first {
			r.t.Fatalf("the generated password changed under the server: Secret (uid and password) %q, was %q", now, first)
		}
		loginWith(what, encoded)
	}

	r.must("delete", "-n", r.ns, db, "--wait=false")
	r.waitGone(db, 3*time.Minute)
	r.checkUntouched(others)
}
