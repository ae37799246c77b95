package labs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mysqlNamespace is where the checks of lab 5's controller task run the
// learner's controller on a MySQL of their own.
const mysqlNamespace = "lab-05-tasks"

// homeworkMySQLYAML is the homework's deploy/cr.yml, without its
// useless_data line.
const homeworkMySQLYAML = `apiVersion: otus.homework/v1
kind: MySQL
metadata:
  name: mysql-instance
spec:
  image: mysql:5.7
  database: otus-database
  password: otuspassword
  storage_size: 1Gi
`

// mysqlTasks checks lab 5's controller task (labs/tasks/mysql), the
// homework's two extra tasks: it runs the learner's controller on the
// homework's MySQL, writes a row, reads the status, changes the password
// and reads the row again with the new one.
func mysqlTasks(ctx context.Context, r *taskRun) {
	const name = "mysql-instance"
	ns := mysqlNamespace
	op := r.runOperator(ctx, ns, "the homework's MySQL", homeworkMySQLYAML, func() error {
		return noDeployment(ctx, r, ns, name, "deployment "+name+" appeared")
	}, operatorBuild{dir: ".", pkg: "./" + r.code, args: []string{"--namespace=" + ns}})
	defer op.close()

	r.gate("your controller gives the MySQL its server, deployment "+name+", owned by the MySQL, its pod ready within 3 minutes (the starter does)", "the MySQL never got its server", func() error {
		return until(ctx, 3*time.Minute, func() error {
			d, err := deploymentIn(ctx, r, ns, name)
			if err != nil {
				return err
			}
			if c := controllerOf(d); c != "MySQL/"+name {
				return fmt.Errorf("deployment %s's controlling owner is %q, not the MySQL %s (MySQL/%s)", name, c, name, name)
			}
			if d.Status.ReadyReplicas != 1 {
				return fmt.Errorf("deployment %s has %d ready pods, not 1", name, d.Status.ReadyReplicas)
			}
			return nil
		})
	})
	// sql runs statement as root with password, through the Service, as a
	// client connects.
	sql := func(password, statement string) []string {
		return []string{"exec", "-n", ns, "deploy/" + name, "--", "mysql", "-h", name, "-uroot", "-p" + password, "-N", "-e", statement, "otus-database"}
	}
	r.gate("the homework's table: the check writes the row 'some data' as root with the password otuspassword, within a minute (the starter's server takes it)", "the server takes no row", func() error {
		return until(ctx, time.Minute, func() error {
			_, err := r.kubectl(ctx, "", sql("otuspassword", "CREATE TABLE IF NOT EXISTS test (id smallint unsigned not null auto_increment, name varchar(20) not null, constraint pk_example primary key (id)); INSERT INTO test (name) VALUES ('some data')")...)
			return err
		})
	})

	status := func(generation int64) func() error {
		return func() error { return mysqlReady(ctx, r, ns, name, generation) }
	}
	r.check("task 1, the status: status.message says "+name+" created, and the condition Ready is True for generation 1 (status.observedGeneration), within 20 seconds", func() error {
		return until(ctx, 20*time.Second, status(1))
	})
	r.gate("task 2, the password: spec.password changed to n3w-pass, within 90 seconds the server takes n3w-pass through its Service, refuses otuspassword, and still holds the row", "the password did not change", func() error {
		if _, err := r.kubectl(ctx, "", "patch", "mysql", "-n", ns, name, "--type=merge", "-p", `{"spec": {"password": "n3w-pass"}}`); err != nil {
			return err
		}
		return until(ctx, 90*time.Second, func() error {
			rows, err := r.kubectl(ctx, "", sql("n3w-pass", "select name from test")...)
			if err != nil {
				return fmt.Errorf("the new password n3w-pass: %s", clientError(rows))
			}
			if !strings.Contains("\n"+rows, "\nsome data\n") {
				return fmt.Errorf("the table test holds %q, without the row 'some data'", rows)
			}
			out, err := r.kubectl(ctx, "", sql("otuspassword", "select 1")...)
			switch {
			case err == nil:
				return errors.New("the old password otuspassword still logs in")
			case !strings.Contains(out, "Access denied"):
				return fmt.Errorf("the old password otuspassword: %s (not Access denied)", clientError(out))
			}
			return nil
		})
	})
	r.check("task 1, the status follows: after the change, Ready is True for generation 2 within 20 seconds", func() error {
		return until(ctx, 20*time.Second, status(2))
	})
}

// mysqlReady says why the MySQL's status does not say what task 1 asks for
// generation: a message "<name> created...", and Ready True for that
// generation.
func mysqlReady(ctx context.Context, r *taskRun, ns, name string, generation int64) error {
	out, err := r.kubectl(ctx, "", "get", "mysql", "-n", ns, name, "-o", "json")
	if err != nil {
		return err
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Status   struct {
			Message            string             `json:"message"`
			ObservedGeneration int64              `json:"observedGeneration"`
			Conditions         []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return fmt.Errorf("kubectl get mysql %s -o json: %w", name, err)
	}
	s := m.Status
	ready := "absent"
	for _, c := range s.Conditions {
		if c.Type == "Ready" {
			ready = string(c.Status)
		}
	}
	switch {
	case m.Metadata.Generation != generation:
		return fmt.Errorf("the MySQL is at generation %d, not %d", m.Metadata.Generation, generation)
	case !strings.HasPrefix(s.Message, name+" created"):
		return fmt.Errorf("status.message is %q, not %q", s.Message, name+" created")
	case ready != "True" || s.ObservedGeneration != generation:
		return fmt.Errorf("the condition Ready is %s, and status.observedGeneration %d (generation %d)", ready, s.ObservedGeneration, generation)
	}
	return nil
}

// clientError is the line of the mysql client's output that says what went
// wrong (ERROR 1045 (28000): Access denied ...), without kubectl's line
// about the exit code; all of it when there is none.
func clientError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ERROR") {
			return line
		}
	}
	return strings.TrimSpace(out)
}
