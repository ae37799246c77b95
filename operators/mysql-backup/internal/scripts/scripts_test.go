package scripts

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// run is one run of a script.
type run struct {
	output string // stdout and stderr, interleaved
	code   int
	result string // what it wrote to TERMINATION_LOG
	argv   string // the client tools' command lines
}

// runScript runs script as a Job would, bash -c with its text, with only
// the environment env (over the defaults: the shared server, as root),
// and PATH through the wrappers that log the tools' argv. A value of
// "<unset>" removes a default.
func (s *server) runScript(t *testing.T, script string, env map[string]string) run {
	t.Helper()
	tmp := t.TempDir()
	vars := map[string]string{
		"PATH":            s.wrapDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME":            tmp, // no ~/.my.cnf
		EnvHost:           "127.0.0.1",
		EnvPort:           strconv.Itoa(s.port),
		EnvPassword:       rootPassword,
		EnvTerminationLog: filepath.Join(tmp, "termination-log"),
		"ARGV_LOG":        filepath.Join(tmp, "argv.log"),
	}
	maps.Copy(vars, env)
	var environ []string
	for k, v := range vars {
		if v != "<unset>" {
			environ = append(environ, k+"="+v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = environ
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := run{output: out.String()}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running the script: %v\n%s", err, r.output)
		}
		r.code = ee.ExitCode()
	}
	b, _ := os.ReadFile(vars[EnvTerminationLog])
	r.result = string(b)
	b, _ = os.ReadFile(vars["ARGV_LOG"])
	r.argv = string(b)
	t.Logf("exit %d, result %q, output:\n%s", r.code, r.result, r.output)
	// Whatever the script and the outcome, no password it was given shows
	// in its output, its result or any client tool's command line.
	for _, name := range []string{EnvPassword, EnvNewPassword, EnvPasswordAlt} {
		pw := vars[name]
		if pw == "" || pw == "<unset>" {
			continue
		}
		forms := []string{
			pw,
			strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(pw), // in SQL
			strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(pw), // in an option file
		}
		for what, text := range map[string]string{"output": r.output, "result": r.result, "client argv": r.argv} {
			for _, form := range forms {
				if strings.Contains(text, form) {
					t.Errorf("the %s shows %s", what, name)
				}
			}
		}
	}
	return r
}

// mustSucceed fails t unless r exited 0 with a result of the outcome o.
func mustSucceed(t *testing.T, r run, o Outcome) Result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit status %d, want 0; output:\n%s", r.code, r.output)
	}
	res, err := ParseResult(r.result)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != o {
		t.Fatalf("result %q, want %s", r.result, o)
	}
	return res
}

// mustFail fails t unless r exited non-zero with a "failed:" result and an
// output that contains want.
func mustFail(t *testing.T, r run, want string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("exit status 0, want a failure; output:\n%s", r.output)
	}
	if !strings.HasPrefix(r.result, "failed: ") {
		t.Errorf("result %q, want failed: ...", r.result)
	}
	if !strings.Contains(r.output, want) {
		t.Errorf("output does not say %q:\n%s", want, r.output)
	}
}

// homework creates the homework's database and table with its two rows.
func homework(t *testing.T, s *server, db string) {
	t.Helper()
	s.mustQuery(t, fmt.Sprintf("DROP DATABASE IF EXISTS `%[1]s`; CREATE DATABASE `%[1]s`; USE `%[1]s`;"+
		" CREATE TABLE test ( id smallint unsigned not null auto_increment, name varchar(20) not null, constraint pk_example primary key (id) );"+
		" INSERT INTO test ( id, name ) VALUES ( null, 'some data' );"+
		" INSERT INTO test ( id, name ) VALUES ( null, 'some data-2' );", db))
	t.Cleanup(func() { _, _ = s.query(rootTCP, "DROP DATABASE IF EXISTS `"+db+"`") })
}

func rows(t *testing.T, s *server, db string) string {
	t.Helper()
	return s.mustQuery(t, "SELECT id, name FROM `"+db+"`.test ORDER BY id")
}

const homeworkRows = "1\tsome data\n2\tsome data-2"

var dumpName = regexp.MustCompile(`^otus-database-[0-9]{8}T[0-9]{6}Z(-[0-9]+)?\.sql\.gz$`)

// listDir returns BACKUP_DIR's files with their contents.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return files
}

func latest(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, LatestFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// TestHomework is the homework's check: a table with two rows survives a
// backup, the loss of the database, and a restore.
func TestHomework(t *testing.T) {
	s := needServer(t)
	const db = "otus-database"
	homework(t, s, db)
	dir := t.TempDir()

	b := mustSucceed(t, s.runScript(t, Backup, map[string]string{EnvDatabase: db, EnvBackupDir: dir}), BackedUp)
	if !dumpName.MatchString(b.Dump) {
		t.Errorf("dump name %q does not match %s", b.Dump, dumpName)
	}
	if got := latest(t, dir); got != b.Dump {
		t.Errorf("latest = %q, want %q", got, b.Dump)
	}
	if files := slices.Sorted(maps.Keys(listDir(t, dir))); !slices.Equal(files, slices.Sorted(slices.Values([]string{b.Dump, LatestFile}))) {
		t.Errorf("BACKUP_DIR holds %q, want the dump and latest", files)
	}

	s.mustQuery(t, "DROP DATABASE `"+db+"`")
	r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir})
	res := mustSucceed(t, r, Restored)
	if res.Dump != b.Dump || res.FreeBytes <= 0 || res.DumpBytes != b.DumpBytes || b.DumpBytes <= 0 {
		t.Errorf("result %q (backup: %+v): want the dump's name, its size and the free space", r.result, b)
	}
	if got := rows(t, s, db); got != homeworkRows {
		t.Errorf("after restore the table holds\n%s\nwant\n%s", got, homeworkRows)
	}
}

// TestRestoreWithoutBackup: nothing to restore is a success, and needs no
// server.
func TestRestoreWithoutBackup(t *testing.T) {
	s := needServer(t)
	t.Run("empty BACKUP_DIR", func(t *testing.T) {
		r := s.runScript(t, Restore, map[string]string{EnvBackupDir: t.TempDir()})
		if res := mustSucceed(t, r, NoBackup); res.FreeBytes <= 0 {
			t.Errorf("result %q: want no-backup and the free space", r.result)
		}
		if !strings.Contains(r.output, "nothing to restore") {
			t.Errorf("output does not say there is nothing to restore")
		}
	})
	t.Run("dumps but no latest, server down", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "otus-database-20240101T000000Z.sql.gz"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir, EnvPort: strconv.Itoa(closedPort(t)), EnvWaitTimeout: "1"})
		// Nothing is restored, and the result names the dump, so that
		// nobody is told there is no backup while one is there.
		if res := mustSucceed(t, r, NoBackup); res.Aside != "otus-database-20240101T000000Z.sql.gz" {
			t.Errorf("result %q does not name the dump kept aside", r.result)
		}
		if !strings.Contains(r.output, "kept aside, is otus-database-20240101T000000Z.sql.gz") {
			t.Errorf("output does not name the dump without latest")
		}
	})
}

// TestTwoBackupsRestoreTwice: every backup keeps its own file, latest names
// the newest, and restoring it twice gives the same rows.
func TestTwoBackupsRestoreTwice(t *testing.T) {
	s := needServer(t)
	const db = "otus-database"
	homework(t, s, db)
	dir := t.TempDir()
	env := map[string]string{EnvDatabase: db, EnvBackupDir: dir}

	first := mustSucceed(t, s.runScript(t, Backup, env), BackedUp)
	firstBytes := listDir(t, dir)[first.Dump]
	s.mustQuery(t, "INSERT INTO `otus-database`.test (name) VALUES ('third')")
	// Likely the same second as the first: the name must not be reused.
	second := mustSucceed(t, s.runScript(t, Backup, env), BackedUp)
	s.mustQuery(t, "INSERT INTO `otus-database`.test (name) VALUES ('after the backup')")

	if first.Dump == second.Dump {
		t.Fatalf("both backups are named %s", first.Dump)
	}
	files := listDir(t, dir)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, slices.Sorted(slices.Values([]string{first.Dump, second.Dump, LatestFile}))) {
		t.Errorf("BACKUP_DIR holds %q, want both dumps and latest", got)
	}
	if files[first.Dump] != firstBytes {
		t.Errorf("the second backup changed the first dump")
	}
	if got := latest(t, dir); got != second.Dump {
		t.Errorf("latest = %q, want the newer %q", got, second.Dump)
	}

	want := homeworkRows + "\n3\tthird"
	for i := range 2 {
		r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir})
		mustSucceed(t, r, Restored)
		if got := rows(t, s, db); got != want {
			t.Errorf("after restore %d the table holds\n%s\nwant\n%s", i+1, got, want)
		}
	}
}

// TestFidelity: what a restore brings back is what was dumped, byte for
// byte, with the routines, triggers, events and views, for a database whose
// name needs quoting.
func TestFidelity(t *testing.T) {
	s := needServer(t)
	const db = "otus$data-base"
	q := "`" + db + "`"
	s.mustQuery(t, "DROP DATABASE IF EXISTS "+q+"; CREATE DATABASE "+q+" CHARACTER SET utf8mb4; USE "+q+";"+`
CREATE TABLE t (id int PRIMARY KEY, txt text CHARACTER SET utf8mb4, bin varbinary(300), n decimal(30,10), d datetime(6), j json);
INSERT INTO t VALUES
  (1, 'ёжик 🦔 ''quoted'' \\back\\slash; -- not a comment', UNHEX(CONCAT(`+allBytesHex+`)), 12345678901234567890.0123456789, '2024-02-29 23:59:59.123456', '{"a": [1, "два"]}'),
  (2, NULL, '', -0.0000000001, NULL, NULL),
  (3, REPEAT('x', 60000), 0x00, 0, '1970-01-01 00:00:01', '[]');
CREATE TABLE audit (id int AUTO_INCREMENT PRIMARY KEY, what varchar(50));
CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('insert ', NEW.id));
CREATE PROCEDURE p() SELECT COUNT(*) FROM t;
CREATE EVENT e ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM audit;
CREATE VIEW v AS SELECT id, LENGTH(bin) AS len FROM t;`)
	t.Cleanup(func() { _, _ = s.query(rootTCP, "DROP DATABASE IF EXISTS "+q) })

	snapshot := func() string {
		return s.mustQuery(t, "USE "+q+";"+
			" SELECT id, HEX(txt), HEX(bin), n, d, j FROM t ORDER BY id;"+
			" SELECT * FROM v ORDER BY id;"+
			" SELECT ROUTINE_NAME, ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE();"+
			" SELECT TRIGGER_NAME, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE();"+
			" SELECT EVENT_NAME, EVENT_DEFINITION, STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE();")
	}
	before := snapshot()
	dir := t.TempDir()
	b := mustSucceed(t, s.runScript(t, Backup, map[string]string{EnvDatabase: db, EnvBackupDir: dir}), BackedUp)
	if !strings.HasPrefix(b.Dump, db+"-") {
		t.Errorf("dump %q is not named after %s", b.Dump, db)
	}
	s.mustQuery(t, "DROP DATABASE "+q)
	mustSucceed(t, s.runScript(t, Restore, map[string]string{EnvBackupDir: dir}), Restored)
	if after := snapshot(); after != before {
		t.Errorf("restored data differs\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The trigger came back working.
	s.mustQuery(t, "INSERT INTO "+q+".t (id) VALUES (4)")
	if got := s.mustQuery(t, "SELECT what FROM "+q+".audit"); got != "insert 4" {
		t.Errorf("audit after an insert = %q, want the restored trigger's row", got)
	}
}

// allBytesHex is an SQL expression for the hex of bytes 0..255.
var allBytesHex = func() string {
	var b strings.Builder
	b.WriteString("'")
	for i := range 256 {
		fmt.Fprintf(&b, "%02X", i)
	}
	b.WriteString("'")
	return b.String()
}()

// TestFailedBackupKeepsEarlierDump: a backup that fails, for any reason,
// exits non-zero, leaves no temporary file and does not touch latest or the
// earlier dump, which still restores.
func TestFailedBackupKeepsEarlierDump(t *testing.T) {
	s := needServer(t)
	const db = "otus-database"
	homework(t, s, db)
	dir := t.TempDir()
	good := mustSucceed(t, s.runScript(t, Backup, map[string]string{EnvDatabase: db, EnvBackupDir: dir}), BackedUp)
	before := listDir(t, dir)
	s.mustQuery(t, "INSERT INTO `otus-database`.test (name) VALUES ('not backed up')")

	tests := []struct {
		name string
		env  map[string]string
		want string // in the output
	}{
		{"wrong password", map[string]string{EnvPassword: "wrong"}, "Access denied"},
		{"server down", map[string]string{EnvPort: strconv.Itoa(closedPort(t)), EnvWaitTimeout: "2"}, "did not answer within 2s"},
		{"unknown database", map[string]string{EnvDatabase: "no-such-database"}, "mysqldump of database `no-such-database`"},
		{"dump cut short", map[string]string{"TEST_TRUNCATE_DUMP": "1"}, "incomplete: it does not end with mysqldump's '-- Dump completed' line"},
		{"no BACKUP_DIR", map[string]string{EnvBackupDir: filepath.Join(dir, "missing")}, "is not a writable directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{EnvDatabase: db, EnvBackupDir: dir}
			maps.Copy(env, tt.env)
			mustFail(t, s.runScript(t, Backup, env), tt.want)
			if after := listDir(t, dir); !maps.Equal(after, before) {
				t.Errorf("BACKUP_DIR changed: holds %q, had %q", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
		})
	}

	s.mustQuery(t, "DROP DATABASE `"+db+"`")
	r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir})
	if res := mustSucceed(t, r, Restored); res.Dump != good.Dump {
		t.Errorf("restored %s, want the earlier dump %s", res.Dump, good.Dump)
	}
	if got := rows(t, s, db); got != homeworkRows {
		t.Errorf("after restore the table holds\n%s\nwant\n%s", got, homeworkRows)
	}
}

// TestRestoreRefusesBadDump: a dump that is cut short is never loaded.
func TestRestoreRefusesBadDump(t *testing.T) {
	s := needServer(t)
	const db = "otus-database"
	homework(t, s, db)
	dir := t.TempDir()
	b := mustSucceed(t, s.runScript(t, Backup, map[string]string{EnvDatabase: db, EnvBackupDir: dir}), BackedUp)
	path := filepath.Join(dir, b.Dump)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	s.mustQuery(t, "INSERT INTO `otus-database`.test (name) VALUES ('kept')")
	r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir})
	mustFail(t, r, "is not a valid gzip file")
	if r.argv != "" {
		t.Errorf("a bad dump reached the server; the tools ran:\n%s", r.argv)
	}

	// A whole gzip of a dump whose end is missing, as a mysqldump killed
	// halfway would leave without the trailer check.
	text := gunzip(t, whole)
	cut := text[:strings.Index(text, "INSERT INTO")+len("INSERT INTO")]
	if err := os.WriteFile(path, gzipped(t, cut), 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.runScript(t, Restore, map[string]string{EnvBackupDir: dir})
	mustFail(t, r, "is incomplete: it does not end with mysqldump's '-- Dump completed' line")
	if r.argv != "" {
		t.Errorf("an incomplete dump reached the server; the tools ran:\n%s", r.argv)
	}
	if got := rows(t, s, db); got != homeworkRows+"\n3\tkept" {
		t.Errorf("a refused restore changed the table:\n%s", got)
	}

	if err := os.WriteFile(filepath.Join(dir, LatestFile), []byte("gone.sql.gz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, s.runScript(t, Restore, map[string]string{EnvBackupDir: dir}), "there is no readable")
}

func gunzip(t *testing.T, b []byte) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func gzipped(t *testing.T, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := io.WriteString(zw, text); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestWaitsForServer: a backup started before the server listens waits for
// it, saying so, then succeeds.
func TestWaitsForServer(t *testing.T) {
	s := needServer(t)
	const db = "otus-database"
	homework(t, s, db)
	port := closedPort(t)
	// A proxy to the server that starts listening two seconds from now.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Second):
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Errorf("proxy: %v", err)
			return
		}
		wg.Go(func() { <-stop; _ = l.Close() })
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { proxy(c, s.port) })
		}
	})
	defer func() { close(stop); wg.Wait() }()

	start := time.Now()
	r := s.runScript(t, Backup, map[string]string{EnvDatabase: db, EnvBackupDir: t.TempDir(), EnvPort: strconv.Itoa(port), EnvWaitTimeout: "30"})
	mustSucceed(t, r, BackedUp)
	if !strings.Contains(r.output, "waiting for the MySQL server at 127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("output has no progress line while waiting")
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("the backup took %v, before the server was there", d)
	}
}

// TestRefusedHostFailsAtOnce: a server that answers every connection with
// ERROR 1130 (this host is not allowed: a data directory two servers
// initialised at once has root@localhost only) fails the script at once,
// with the server's words, instead of after WAIT_TIMEOUT (a restore Job
// waited 5 minutes per try, for three tries, saying it was loading).
func TestRefusedHostFailsAtOnce(t *testing.T) {
	s := needServer(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	// The ERR packet a MySQL or MariaDB server sends instead of its
	// greeting to a host it does not admit.
	msg := "Host '127.0.0.1' is not allowed to connect to this MariaDB server"
	body := append([]byte{0xff, 0x6a, 0x04}, msg...) // 1130, little-endian
	packet := append([]byte{byte(len(body)), 0, 0, 0}, body...)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(packet)
			_ = c.Close()
		}
	}()
	start := time.Now()
	r := s.runScript(t, Backup, map[string]string{EnvDatabase: "otus-database", EnvBackupDir: t.TempDir(),
		EnvPort: strconv.Itoa(l.Addr().(*net.TCPAddr).Port), EnvWaitTimeout: "30"})
	mustFail(t, r, "refuses connections from this pod's address")
	if !strings.Contains(r.result, "is not allowed to connect") {
		t.Errorf("result %q does not give the server's words", r.result)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the script took %v to fail against a server that refuses its host", d)
	}
}

func proxy(c net.Conn, port int) {
	defer func() { _ = c.Close() }()
	up, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// closedPort returns a port on 127.0.0.1 where nothing listens.
func closedPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trickyPassword has what breaks naive quoting in SQL, option files and
// shells: quotes, a backslash, $, spaces, ;, # and a backquote.
const trickyPassword = ` it's a \ $HOME; "quoted" #not-a-comment ` + "`x`"

// TestPassword: password.sh changes both root accounts to a password that
// needs escaping, is idempotent, fails clearly when neither password
// works, and never shows a password.
func TestPassword(t *testing.T) {
	s := needServer(t)
	t.Cleanup(func() {
		// Put rootPassword back whatever happened, for the other tests.
		for _, pw := range []string{trickyPassword, rootPassword} {
			if _, err := s.query(login{user: "root", password: pw}, fmt.Sprintf(
				"ALTER USER root@'%%' IDENTIFIED BY '%[1]s', root@'localhost' IDENTIFIED BY '%[1]s'", rootPassword)); err == nil {
				return
			}
		}
		t.Error("cannot restore the root password")
	})
	secrets := []string{rootPassword, trickyPassword, "wrong-1", "wrong-2"}
	noSecrets := func(t *testing.T, r run) {
		t.Helper()
		for _, pw := range secrets {
			for what, text := range map[string]string{"output": r.output, "result": r.result, "argv": r.argv} {
				if strings.Contains(text, pw) {
					t.Errorf("the %s holds the password %q", what, pw)
				}
			}
		}
		if r.argv == "" {
			t.Errorf("no client tool ran through the argv-logging wrappers")
		}
	}
	change := map[string]string{EnvPassword: rootPassword, EnvNewPassword: trickyPassword}

	r := s.runScript(t, Password, change)
	noSecrets(t, r)
	mustSucceed(t, r, PasswordChanged)
	if !strings.Contains(r.output, "root@'%' and root@'localhost'") {
		t.Errorf("output does not name both accounts")
	}
	for _, l := range []login{
		{user: "root", password: trickyPassword},               // root@'%'
		{user: "root", password: trickyPassword, socket: true}, // root@'localhost'
	} {
		if got, err := s.query(l, "SELECT CURRENT_USER()"); err != nil {
			t.Errorf("login with the new password (socket %v): %v", l.socket, err)
		} else {
			t.Logf("the new password logs in as %s", got)
		}
		l.password = rootPassword
		if _, err := s.query(l, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "Access denied") {
			t.Errorf("login with the old password (socket %v): %v, want Access denied", l.socket, err)
		}
	}

	r = s.runScript(t, Password, change)
	noSecrets(t, r)
	mustSucceed(t, r, PasswordAlreadyChanged)
	if !strings.Contains(r.output, "already changed") {
		t.Errorf("output does not say already changed")
	}

	r = s.runScript(t, Password, map[string]string{EnvPassword: "wrong-1", EnvNewPassword: "wrong-2"})
	noSecrets(t, r)
	mustFail(t, r, "accepts neither MYSQL_PASSWORD nor MYSQL_NEW_PASSWORD for user root")

	// And back, with the tricky password as the current one.
	r = s.runScript(t, Password, map[string]string{EnvPassword: trickyPassword, EnvNewPassword: rootPassword})
	noSecrets(t, r)
	mustSucceed(t, r, PasswordChanged)
	if _, err := s.query(rootTCP, "SELECT 1"); err != nil {
		t.Errorf("root password not back: %v", err)
	}

	t.Run("ALTER USER refused", func(t *testing.T) {
		// Changing its own '%' account is allowed, the 'localhost' one
		// needs CREATE USER: the one statement changes neither.
		s.mustQuery(t, "CREATE USER app2@'%' IDENTIFIED BY 'app2-old'; CREATE USER app2@'localhost' IDENTIFIED BY 'app2-old'; GRANT SELECT ON mysql.* TO app2@'%'")
		t.Cleanup(func() { _, _ = s.query(rootTCP, "DROP USER IF EXISTS app2@'%', app2@'localhost'") })
		r := s.runScript(t, Password, map[string]string{EnvUser: "app2", EnvPassword: "app2-old", EnvNewPassword: trickyPassword})
		mustFail(t, r, "ALTER USER for app2@'%' and app2@'localhost' at 127.0.0.1:"+strconv.Itoa(s.port)+" failed")
		if _, err := s.query(login{user: "app2", password: "app2-old"}, "SELECT 1"); err != nil {
			t.Errorf("app2@'%%' lost its old password in a failed change: %v", err)
		}
	})

	t.Run("only a '%' account", func(t *testing.T) {
		s.mustQuery(t, "CREATE USER app@'%' IDENTIFIED BY 'app-old'; GRANT CREATE USER ON *.* TO app@'%'; GRANT SELECT ON mysql.* TO app@'%'")
		t.Cleanup(func() { _, _ = s.query(rootTCP, "DROP USER IF EXISTS app@'%'") })
		r := s.runScript(t, Password, map[string]string{EnvUser: "app", EnvPassword: "app-old", EnvNewPassword: "app-new"})
		mustSucceed(t, r, PasswordChanged)
		if !strings.Contains(r.output, "changed the password of app@'%' at") {
			t.Errorf("output does not name app@'%%' alone")
		}
		if _, err := s.query(login{user: "app", password: "app-new"}, "SELECT 1"); err != nil {
			t.Errorf("app cannot log in with the new password: %v", err)
		}
		if got := s.mustQuery(t, "SELECT COUNT(*) FROM mysql.user WHERE User = 'app'"); got != "1" {
			t.Errorf("app has %s accounts, want the one it had", got)
		}
	})
}

// TestShellcheck: the scripts are clean for shellcheck at every severity,
// with the optional checks that find bugs. Left out: braces around every
// variable (taste), uppercase variables never assigned (the environment is
// the scripts' input), and the set -e notes, which flag each deliberate
// `if f` and `$(...)` in a message.
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed: apt-get install -y shellcheck")
	}
	// The scripts as the Jobs run them, common.sh included.
	dir := t.TempDir()
	var files []string
	for name, text := range map[string]string{"backup.sh": Backup, "restore.sh": Restore, "password.sh": Password, "verify.sh": Verify} {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	args := append([]string{"--shell=bash", "--severity=style",
		"--enable=add-default-case,avoid-nullary-conditions,deprecate-which,quote-safe-variables,require-double-brackets"}, files...)
	out, err := exec.Command(sc, args...).CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// TestCommonPart: each script gets common.sh once, in place of its marker.
func TestCommonPart(t *testing.T) {
	for name, text := range map[string]string{"backup.sh": Backup, "restore.sh": Restore, "password.sh": Password, "verify.sh": Verify} {
		if strings.Contains(text, commonMarker) || strings.Count(text, common) != 1 {
			t.Errorf("%s does not carry common.sh exactly once in place of its marker", name)
		}
	}
}

// TestEnvContract: each script reads exactly the variables its list says,
// so the operator's Job builder and the scripts cannot disagree.
func TestEnvContract(t *testing.T) {
	ref := regexp.MustCompile(`\$\{?([A-Z][A-Z0-9_]*)|require ([A-Z][A-Z0-9_]*)`)
	bash := map[string]bool{"PIPESTATUS": true, "SECONDS": true, "IFS": true}
	all := map[string]bool{}
	for _, tt := range []struct {
		name, text string
		env        []string
	}{
		{"backup.sh", Backup, BackupEnv},
		{"restore.sh", Restore, RestoreEnv},
		{"password.sh", Password, PasswordEnv},
		// verify.sh calls none of common.sh's functions of the server:
		// its own text, and result's TERMINATION_LOG.
		{"verify.sh", verifySource + "${TERMINATION_LOG}", VerifyEnv},
	} {
		read := map[string]bool{}
		for _, m := range ref.FindAllStringSubmatch(tt.text, -1) {
			if v := m[1] + m[2]; !bash[v] {
				read[v] = true
				all[v] = true
			}
		}
		if got, want := slices.Sorted(maps.Keys(read)), slices.Sorted(slices.Values(tt.env)); !slices.Equal(got, want) {
			t.Errorf("%s reads %q, its list says %q", tt.name, got, want)
		}
	}
	for _, v := range []string{EnvHost, EnvPort, EnvUser, EnvPassword, EnvNewPassword, EnvDatabase, EnvBackupDir, EnvWaitTimeout, EnvTerminationLog} {
		if !all[v] {
			t.Errorf("no script reads %s", v)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("port=${%s:-%d}", EnvPort, DefaultPort),
		fmt.Sprintf("user=${%s:-%s}", EnvUser, DefaultUser),
		fmt.Sprintf("wait_timeout=${%s:-%d}", EnvWaitTimeout, DefaultWaitTimeoutSeconds),
		fmt.Sprintf("${%s:-%s}", EnvTerminationLog, DefaultTerminationLog),
		"$backup_dir/" + LatestFile,
	} {
		if !strings.Contains(Backup, want) {
			t.Errorf("backup.sh does not have %q: the Go defaults and the script disagree", want)
		}
	}
}

func TestCommand(t *testing.T) {
	if got := Command(Restore); len(got) != 3 || got[0] != "bash" || got[1] != "-c" || got[2] != Restore {
		t.Errorf("Command(Restore) = %q...", got[:2])
	}
}

func TestParseResult(t *testing.T) {
	tests := []struct {
		msg     string
		want    Result
		wantErr bool
	}{
		{msg: "backed-up otus-database-20240101T000000Z.sql.gz", want: Result{Outcome: BackedUp, Dump: "otus-database-20240101T000000Z.sql.gz", FreeBytes: -1, DumpBytes: -1}},
		{msg: "backed-up-aside d.sql.gz free=10 size=3", want: Result{Outcome: BackedUpAside, Dump: "d.sql.gz", FreeBytes: 10, DumpBytes: 3}},
		{msg: "restored otus-database-20240101T000000Z-1.sql.gz\n", want: Result{Outcome: Restored, Dump: "otus-database-20240101T000000Z-1.sql.gz", FreeBytes: -1, DumpBytes: -1}},
		{msg: "restored d.sql.gz free=1073741824 size=870", want: Result{Outcome: Restored, Dump: "d.sql.gz", FreeBytes: 1 << 30, DumpBytes: 870}},
		{msg: "no-backup", want: Result{Outcome: NoBackup, FreeBytes: -1, DumpBytes: -1}},
		{msg: "no-backup free=5", want: Result{Outcome: NoBackup, FreeBytes: 5, DumpBytes: -1}},
		{msg: "password-changed", want: Result{Outcome: PasswordChanged, FreeBytes: -1, DumpBytes: -1}},
		{msg: "password-already-changed", want: Result{Outcome: PasswordAlreadyChanged, FreeBytes: -1, DumpBytes: -1}},
		{msg: "failed: the MySQL server at db:3306 did not answer within 60s", want: Result{Outcome: Failed, Reason: "the MySQL server at db:3306 did not answer within 60s", FreeBytes: -1, DumpBytes: -1}},
		{msg: "no-backup aside=d.sql.gz free=5", want: Result{Outcome: NoBackup, Aside: "d.sql.gz", FreeBytes: 5, DumpBytes: -1}},
		{msg: "restored d.sql.gz aside=e.sql.gz size=3", want: Result{Outcome: Restored, Dump: "d.sql.gz", Aside: "e.sql.gz", FreeBytes: -1, DumpBytes: 3}},
		{msg: "verified d.sql.gz free=10 size=3", want: Result{Outcome: Verified, Dump: "d.sql.gz", FreeBytes: 10, DumpBytes: 3}},
		{msg: "verified", wantErr: true},
		{msg: "verified ../d.sql.gz", wantErr: true},
		{msg: "no-backup aside=../d.sql.gz", wantErr: true},
		{msg: "backed-up d.sql.gz aside=e.sql.gz", wantErr: true},
		{msg: "restored d.sql.gz aside=e.sql.gz aside=f.sql.gz", wantErr: true},
		{msg: "no-backup size=5", wantErr: true},
		{msg: "no-backup free=-1", wantErr: true},
		{msg: "restored free=5", wantErr: true},
		{msg: "restored d.sql.gz free=5 free=6", wantErr: true},
		{msg: "restored d.sql.gz used=5", wantErr: true},
		{msg: "", wantErr: true},
		{msg: "restored", wantErr: true},
		{msg: "restored ../x.sql.gz", wantErr: true},
		{msg: "no-backup now", wantErr: true},
		{msg: "something else", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseResult(tt.msg)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseResult(%q) = %+v, %v; want %+v, error %v", tt.msg, got, err, tt.want, tt.wantErr)
		}
	}
}

// backupRun runs backup.sh of database db into dir with env added.
func backupRun(t *testing.T, s *server, db, dir string, env map[string]string) run {
	t.Helper()
	vars := map[string]string{EnvDatabase: db, EnvBackupDir: dir}
	maps.Copy(vars, env)
	return s.runScript(t, Backup, vars)
}

// TestLatestOnlyMovesForward: a dump becomes latest only from the dump the
// server was restored from, and never when the operator keeps it aside.
func TestLatestOnlyMovesForward(t *testing.T) {
	s := needServer(t)
	const db = "forward"
	homework(t, s, db)
	dir := t.TempDir()
	first := mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvLatestExpected: "none"}), BackedUp)
	if got := latest(t, dir); got != first.Dump {
		t.Fatalf("latest = %q, want the first dump %q", got, first.Dump)
	}
	second := mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvLatestExpected: first.Dump}), BackedUp)
	if got := latest(t, dir); got != second.Dump {
		t.Fatalf("latest = %q, want the second dump %q", got, second.Dump)
	}
	// A server restored from the first dump, backed up after the second
	// was taken, does not hide the second.
	stale := backupRun(t, s, db, dir, map[string]string{EnvLatestExpected: first.Dump})
	aside := mustSucceed(t, stale, BackedUpAside)
	if got := latest(t, dir); got != second.Dump {
		t.Errorf("latest = %q after a stale server's backup, want %q", got, second.Dump)
	}
	if !strings.Contains(stale.output, "kept aside") {
		t.Errorf("the output does not say the dump is kept aside")
	}
	if _, ok := listDir(t, dir)[aside.Dump]; !ok {
		t.Errorf("the dump kept aside, %s, is not in BACKUP_DIR", aside.Dump)
	}
	// "none" expects no latest at all: a server that restored nothing, or
	// never finished its restore, does not hide the last backup.
	mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvLatestExpected: "none"}), BackedUpAside)
	if got := latest(t, dir); got != second.Dump {
		t.Errorf("latest = %q, want %q", got, second.Dump)
	}
}

// TestRetention: the newest KEEP_BACKUPS dumps stay, and the one latest
// names, however old.
func TestRetention(t *testing.T) {
	s := needServer(t)
	const db = "kept"
	homework(t, s, db)
	dir := t.TempDir()
	var dumps []string
	for range 4 {
		dumps = append(dumps, mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvKeepBackups: "2"}), BackedUp).Dump)
	}
	files := listDir(t, dir)
	delete(files, LatestFile)
	if got, want := slices.Sorted(maps.Keys(files)), slices.Sorted(slices.Values(dumps[2:])); !slices.Equal(got, want) {
		t.Errorf("after 4 backups keeping 2, BACKUP_DIR holds %q, want %q", got, want)
	}
	// Two dumps kept aside, keeping 1: latest's dump (now the oldest) stays.
	var aside []string
	for range 2 {
		aside = append(aside, mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvKeepBackups: "1", EnvLatestExpected: "none"}), BackedUpAside).Dump)
	}
	files = listDir(t, dir)
	delete(files, LatestFile)
	if got, want := slices.Sorted(maps.Keys(files)), slices.Sorted(slices.Values([]string{dumps[3], aside[1]})); !slices.Equal(got, want) {
		t.Errorf("BACKUP_DIR holds %q, want latest's dump and the newest: %q", got, want)
	}
	if r := backupRun(t, s, db, dir, map[string]string{EnvKeepBackups: "0"}); r.code == 0 || !strings.Contains(r.result, "KEEP_BACKUPS=0") {
		t.Errorf("KEEP_BACKUPS=0: exit %d, result %q; want a failure naming it", r.code, r.result)
	}
}

// TestDatabaseLikeAnOption: a database named like an option never reaches
// the dump tool, where --all-databases would dump every database.
func TestDatabaseLikeAnOption(t *testing.T) {
	s := needServer(t)
	for _, db := range []string{"--all-databases", "-x"} {
		dir := t.TempDir()
		r := backupRun(t, s, db, dir, nil)
		if r.code == 0 || !strings.Contains(r.result, "starts with -") {
			t.Errorf("MYSQL_DATABASE=%s: exit %d, result %q; want a refusal", db, r.code, r.result)
		}
		if strings.Contains(r.argv, db) {
			t.Errorf("MYSQL_DATABASE=%s reached a client tool: %s", db, r.argv)
		}
		if files := listDir(t, dir); len(files) != 0 {
			t.Errorf("MYSQL_DATABASE=%s left %v in BACKUP_DIR", db, slices.Sorted(maps.Keys(files)))
		}
	}
}

// TestAlternatePassword: the server may have the password a password Job
// set, which the operator passes as MYSQL_PASSWORD_ALT.
func TestAlternatePassword(t *testing.T) {
	s := needServer(t)
	const db = "alternate"
	homework(t, s, db)
	dir := t.TempDir()
	r := backupRun(t, s, db, dir, map[string]string{EnvPassword: "not-the-password", EnvPasswordAlt: rootPassword})
	b := mustSucceed(t, r, BackedUp)
	if !strings.Contains(r.output, "MYSQL_PASSWORD_ALT logs in") {
		t.Errorf("the output does not say the alternate password was used")
	}
	mustSucceed(t, s.runScript(t, Restore, map[string]string{EnvBackupDir: dir, EnvPassword: "not-the-password", EnvPasswordAlt: rootPassword}), Restored)
	r = backupRun(t, s, db, dir, map[string]string{EnvPassword: "not-the-password", EnvPasswordAlt: "nor-this-one"})
	if r.code == 0 || !strings.Contains(r.result, "accepts neither MYSQL_PASSWORD nor MYSQL_PASSWORD_ALT") {
		t.Errorf("both passwords wrong: exit %d, result %q; want a failure that says so", r.code, r.result)
	}
	if got := latest(t, dir); got != b.Dump {
		t.Errorf("latest = %q after a refused backup, want %q", got, b.Dump)
	}
	// Without an alternate, a refused password fails as it always did.
	r = backupRun(t, s, db, dir, map[string]string{EnvPassword: "not-the-password"})
	if r.code == 0 || !strings.Contains(r.result, "cannot log in") {
		t.Errorf("a wrong password and no alternate: exit %d, result %q", r.code, r.result)
	}
}

// TestRestoreNeverOverwritesWrites: a restore does not load its dump into a
// database that already has tables (someone wrote there before the restore
// ran), unless they are from an earlier try of the same restore; and its
// result names a newer dump that was kept aside.
func TestRestoreNeverOverwritesWrites(t *testing.T) {
	s := needServer(t)
	const db = "early"
	homework(t, s, db)
	dir := t.TempDir()
	dump := mustSucceed(t, backupRun(t, s, db, dir, nil), BackedUp)
	restore := func(id string) run {
		return s.runScript(t, Restore, map[string]string{EnvBackupDir: dir, EnvDatabase: db, EnvRestoreID: id})
	}

	// A new server, as its entrypoint leaves it (an empty database), where
	// a learner wrote before the restore ran.
	s.mustQuery(t, "DROP DATABASE `"+db+"`; CREATE DATABASE `"+db+"`; CREATE TABLE `"+db+"`.test (id int, name varchar(20)); INSERT INTO `"+db+"`.test VALUES (1, 'written early')")
	mustFail(t, restore("volume-1"), "already has tables (test) written before the restore")
	if got := s.mustQuery(t, "SELECT id, name FROM `"+db+"`.test"); got != "1\twritten early" {
		t.Errorf("a refused restore changed the table:\n%s", got)
	}

	// The same restore tried again after it stopped halfway: its own
	// tables are no reason to stop. Another volume's marker is cleaned up.
	for _, m := range []string{".restoring-volume-2", ".restoring-gone"} {
		if err := os.WriteFile(filepath.Join(dir, m), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustSucceed(t, restore("volume-2"), Restored)
	if got := rows(t, s, db); got != homeworkRows {
		t.Errorf("after the second try the table holds\n%s\nwant\n%s", got, homeworkRows)
	}
	files := listDir(t, dir)
	for _, m := range []string{".restoring-volume-2", ".restoring-gone"} {
		if _, ok := files[m]; ok {
			t.Errorf("%s is still in BACKUP_DIR after the restore", m)
		}
	}

	// An empty database takes the dump; a newer dump kept aside is named.
	aside := mustSucceed(t, backupRun(t, s, db, dir, map[string]string{EnvLatestExpected: "none"}), BackedUpAside)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, aside.Dump), later, later); err != nil {
		t.Fatal(err)
	}
	s.mustQuery(t, "DROP DATABASE `"+db+"`; CREATE DATABASE `"+db+"`")
	res := mustSucceed(t, restore("volume-3"), Restored)
	if res.Dump != dump.Dump || res.Aside != aside.Dump {
		t.Errorf("restored %s with aside %q; want %s with aside %s", res.Dump, res.Aside, dump.Dump, aside.Dump)
	}

	// RESTORE_FROM loads the dump kept aside instead.
	s.mustQuery(t, "DROP DATABASE `"+db+"`; CREATE DATABASE `"+db+"`")
	r := s.runScript(t, Restore, map[string]string{EnvBackupDir: dir, EnvDatabase: db, EnvRestoreFrom: aside.Dump})
	if res := mustSucceed(t, r, Restored); res.Dump != aside.Dump || res.Aside != "" {
		t.Errorf("RESTORE_FROM=%s: result %q", aside.Dump, r.result)
	}
	mustFail(t, s.runScript(t, Restore, map[string]string{EnvBackupDir: dir, EnvRestoreFrom: "../x.sql.gz"}), "RESTORE_FROM names '../x.sql.gz', which is not a dump file name")
}

// TestBackupRemovesLeftovers: the temporary files of a backup killed with
// SIGKILL are removed by the next one.
func TestBackupRemovesLeftovers(t *testing.T) {
	s := needServer(t)
	const db = "leftovers"
	homework(t, s, db)
	dir := t.TempDir()
	for _, f := range []string{".backup-tmp.AbC123", ".latest-tmp.XyZ789"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("half a dump"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := backupRun(t, s, db, dir, nil)
	b := mustSucceed(t, r, BackedUp)
	if got, want := slices.Sorted(maps.Keys(listDir(t, dir))), slices.Sorted(slices.Values([]string{b.Dump, LatestFile})); !slices.Equal(got, want) {
		t.Errorf("BACKUP_DIR holds %q, want %q", got, want)
	}
	if !strings.Contains(r.output, "removed .backup-tmp.AbC123") {
		t.Error("the output does not say the leftover was removed")
	}
}

// dumpFixture writes, as file name in dir, a gzip file of text: a dump when
// text ends with mysqldump's last line.
func dumpFixture(t *testing.T, dir, name, text string) int64 {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, text); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	return int64(b.Len())
}

// TestVerify: verify.sh passes only when the dump the backup reported is
// in BACKUP_DIR, whole, of the size reported, and named by latest when it
// must be; it needs no server.
func TestVerify(t *testing.T) {
	noServer := &server{}
	const dump = "otus-database-20261129T050000Z.sql.gz"
	const whole = "CREATE TABLE test (id int);\n-- Dump completed on 2026-11-29  5:00:00\n"
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) map[string]string
		want  string // "" to pass, else what the failure says
	}{
		{"as reported", func(t *testing.T, dir string) map[string]string {
			size := dumpFixture(t, dir, dump, whole)
			if err := os.WriteFile(filepath.Join(dir, LatestFile), []byte(dump+"\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			return map[string]string{EnvVerifySize: strconv.FormatInt(size, 10), EnvVerifyLatest: "yes"}
		}, ""},
		{"kept aside, latest not asked", func(t *testing.T, dir string) map[string]string {
			dumpFixture(t, dir, dump, whole)
			return nil
		}, ""},
		{"gone", func(t *testing.T, dir string) map[string]string {
			dumpFixture(t, dir, "other.sql.gz", whole)
			return nil
		}, dump + ", which the backup reported, is not on the backup volume"},
		{"another size", func(t *testing.T, dir string) map[string]string {
			size := dumpFixture(t, dir, dump, whole)
			return map[string]string{EnvVerifySize: strconv.FormatInt(size+1, 10)}
		}, "bytes on the backup volume, where the backup reported"},
		{"cut short", func(t *testing.T, dir string) map[string]string {
			dumpFixture(t, dir, dump, "CREATE TABLE test (id int);\n")
			return nil
		}, "is incomplete"},
		{"not gzip", func(t *testing.T, dir string) map[string]string {
			if err := os.WriteFile(filepath.Join(dir, dump), []byte("half"), 0o640); err != nil {
				t.Fatal(err)
			}
			return nil
		}, "is not a valid gzip file"},
		{"latest names another", func(t *testing.T, dir string) map[string]string {
			dumpFixture(t, dir, dump, whole)
			if err := os.WriteFile(filepath.Join(dir, LatestFile), []byte("older.sql.gz\n"), 0o640); err != nil {
				t.Fatal(err)
			}
			return map[string]string{EnvVerifyLatest: "yes"}
		}, "latest names 'older.sql.gz', not " + dump},
		{"no latest", func(t *testing.T, dir string) map[string]string {
			dumpFixture(t, dir, dump, whole)
			return map[string]string{EnvVerifyLatest: "yes"}
		}, "latest names 'nothing'"},
		{"a path, not a name", func(t *testing.T, dir string) map[string]string {
			return map[string]string{EnvVerifyDump: "../" + dump}
		}, "VERIFY_DUMP=../" + dump + " is not a dump file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{EnvBackupDir: dir, EnvVerifyDump: dump}
			maps.Copy(env, tt.setup(t, dir))
			r := noServer.runScript(t, Verify, env)
			if tt.want != "" {
				mustFail(t, r, tt.want)
				return
			}
			if res := mustSucceed(t, r, Verified); res.Dump != dump || res.DumpBytes <= 0 {
				t.Errorf("result %+v, want %s with its size", res, dump)
			}
		})
	}
}

// TestVerifyWhatBackupReports: verify.sh, given what backup.sh reported,
// finds the dump as reported: the two scripts agree on names and sizes.
func TestVerifyWhatBackupReports(t *testing.T) {
	s := needServer(t)
	const db = "verified"
	homework(t, s, db)
	dir := t.TempDir()
	b := mustSucceed(t, backupRun(t, s, db, dir, nil), BackedUp)
	v := mustSucceed(t, s.runScript(t, Verify, map[string]string{EnvBackupDir: dir, EnvVerifyDump: b.Dump,
		EnvVerifySize: strconv.FormatInt(b.DumpBytes, 10), EnvVerifyLatest: "yes"}), Verified)
	if v.Dump != b.Dump || v.DumpBytes != b.DumpBytes {
		t.Errorf("verify.sh found %+v, backup.sh reported %+v", v, b)
	}
}

// TestBackupOnANewVolumeBecomesLatest: a backup volume made anew (the one
// the server was restored from was deleted) holds no backup for the dump
// to hide: the dump becomes latest, so that the next MySQL restores it.
// One more dump there, and the rule that latest only moves forward holds.
func TestBackupOnANewVolumeBecomesLatest(t *testing.T) {
	s := needServer(t)
	const db = "anew"
	homework(t, s, db)
	dir := t.TempDir()
	expect := map[string]string{EnvLatestExpected: "otus-database-20261101T000000Z.sql.gz"}
	r := backupRun(t, s, db, dir, expect)
	first := mustSucceed(t, r, BackedUp)
	if got := latest(t, dir); got != first.Dump {
		t.Fatalf("latest = %q, want %q", got, first.Dump)
	}
	if !strings.Contains(r.output, "has no backup but this one") {
		t.Error("the output does not say why the dump became latest")
	}
	if err := os.Remove(filepath.Join(dir, LatestFile)); err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, backupRun(t, s, db, dir, expect), BackedUpAside)
}
