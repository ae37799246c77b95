package scripts

// The MariaDB server the tests run the scripts against: one per test binary,
// started in TestMain, because starting one takes seconds on two cores.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const installHint = "apt-get install -y mariadb-server mariadb-client"

// rootPassword is the server's root password between tests; a test that
// changes it puts it back.
const rootPassword = "Root-Pw-7c1e"

// server is a mariadbd listening on 127.0.0.1:port and on socket, with
// root@'localhost' and root@'%' both holding rootPassword.
type server struct {
	dir    string
	port   int
	socket string
	client string // the mariadb (or mysql) client, for the tests' own SQL
	cmd    *exec.Cmd
	exited chan error
	// wrapDir holds wrappers named like the client tools that log their
	// arguments to $ARGV_LOG, so a test can prove no password is in argv.
	wrapDir string
}

var (
	shared     *server
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// The server gets SIGKILL if this thread dies (see procattr_linux_test.go);
	// the main goroutine keeps it alive until the tests end.
	runtime.LockOSThread()
	s, err := startServer()
	switch {
	case errors.Is(err, errMissing) && os.Getenv(requiredVar) == "required":
		fmt.Fprintf(os.Stderr, "%s=required, and %v\n", requiredVar, err)
		return 1
	case errors.Is(err, errMissing):
		skipReason = fmt.Sprintf("%v (%s=required makes this a failure)", err, requiredVar)
		fmt.Fprintf(os.Stderr, "the tests against MariaDB are SKIPPED: %s\n", skipReason)
	case err != nil:
		fmt.Fprintln(os.Stderr, "starting MariaDB for the tests:", err)
		return 1
	default:
		shared = s
		defer s.stop()
	}
	return m.Run()
}

// requiredVar set to "required" makes a missing MariaDB a failure, not a
// skip: .ci/run and the GitHub workflow install it and set it.
const requiredVar = "MARIADB_TESTS"

// needServer returns the shared server, or skips t when MariaDB is not
// installed and MARIADB_TESTS is not "required".
func needServer(t *testing.T) *server {
	t.Helper()
	if shared == nil {
		t.Skip(skipReason)
	}
	return shared
}

var errMissing = errors.New("MariaDB is not installed")

// lookFirst finds the first of names in PATH or in the sbin directories.
func lookFirst(names ...string) (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (none of %s found): %s", errMissing, strings.Join(names, ", "), installHint)
}

func startServer() (*server, error) {
	mariadbd, err := lookFirst("mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	installDB, err := lookFirst("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	client, err := lookFirst("mariadb", "mysql")
	if err != nil {
		return nil, err
	}
	me, err := user.Current()
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "scripts-test-")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir, socket: filepath.Join(dir, "mysqld.sock"), client: client}
	ok := false
	defer func() {
		if !ok {
			s.stop()
		}
	}()

	// A temporary directory of its own: a server starting removes the
	// temporary tables it finds in its tmpdir (#sql-*), and with the
	// shared /tmp one test binary's server removed another's while it
	// installed its system tables (make test runs test-unit and
	// test-integration side by side).
	tmpdir := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmpdir, 0o700); err != nil {
		return nil, err
	}
	// root@localhost authenticates by the OS user, the one running the
	// tests: it sets the passwords below without knowing one.
	datadir := filepath.Join(dir, "data")
	install := exec.Command(installDB, "--no-defaults", "--user="+me.Username,
		"--datadir="+datadir, "--tmpdir="+tmpdir, "--auth-root-authentication-method=socket",
		"--auth-root-socket-user="+me.Username, "--skip-test-db", "--skip-name-resolve")
	if out, err := install.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", installDB, err, out)
	}

	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	errorLog := filepath.Join(dir, "error.log")
	s.cmd = exec.Command(mariadbd, "--no-defaults", "--user="+me.Username,
		"--datadir="+datadir, "--tmpdir="+tmpdir, "--socket="+s.socket, "--pid-file="+filepath.Join(dir, "mysqld.pid"),
		"--port="+strconv.Itoa(s.port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--log-error="+errorLog, "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=2")
	setDeathSignal(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()

	// Ready when root can log in over the socket, by OS user.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command(client, "--no-defaults", "--socket="+s.socket, "-uroot", "-e", "SELECT 1").CombinedOutput()
		if err == nil {
			break
		}
		select {
		case werr := <-s.exited:
			s.exited <- werr
			return nil, fmt.Errorf("mariadbd exited (%w):\n%s", werr, tail(errorLog))
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("mariadbd did not answer in 30s: %s\n%s", out, tail(errorLog))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The accounts of a mysql image: root@'localhost' and root@'%', same
	// password. With --skip-name-resolve a TCP login from 127.0.0.1 is
	// root@'%' and a socket login root@'localhost', so a test can check
	// both accounts.
	setup := fmt.Sprintf(`ALTER USER root@'localhost' IDENTIFIED BY '%[1]s';
CREATE USER root@'%%' IDENTIFIED BY '%[1]s';
GRANT ALL PRIVILEGES ON *.* TO root@'%%' WITH GRANT OPTION;`, rootPassword)
	setupCmd := exec.Command(client, "--no-defaults", "--socket="+s.socket, "-uroot")
	setupCmd.Stdin = strings.NewReader(setup)
	if out, err := setupCmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("setting the root passwords: %w\n%s", err, out)
	}

	if err := s.writeWrappers(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// writeWrappers puts, in wrapDir, a script for each client tool name that
// logs its arguments to $ARGV_LOG and runs the real tool. With
// $TEST_TRUNCATE_DUMP set, the dump tool's output is cut after 20 lines and
// it still exits 0, as a dump cut short by a bug or a full pipe would look.
func (s *server) writeWrappers() error {
	s.wrapDir = filepath.Join(s.dir, "wrap")
	if err := os.Mkdir(s.wrapDir, 0o755); err != nil {
		return err
	}
	tools := [][]string{
		{"mariadb", "mysql"},
		{"mariadb-dump", "mysqldump"},
		{"mariadb-admin", "mysqladmin"},
	}
	for _, names := range tools {
		real, err := lookFirst(names...)
		if err != nil {
			return err
		}
		truncate := ""
		if names[0] == "mariadb-dump" {
			truncate = fmt.Sprintf("if [[ -n ${TEST_TRUNCATE_DUMP:-} ]]; then\n\t%q \"$@\" | head -n 20\n\texit 0\nfi\n", real)
		}
		body := fmt.Sprintf("#!/usr/bin/env bash\n"+
			"[[ -z ${ARGV_LOG:-} ]] || printf '%%s\\n' \"$0 $*\" >>\"$ARGV_LOG\"\n%sexec %q \"$@\"\n", truncate, real)
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(s.wrapDir, name), []byte(body), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.exited:
			_ = err // SIGTERM's exit status says nothing of use
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited //nolint:errcheck // killed on purpose: its exit status says nothing of use
		}
	}
	_ = os.RemoveAll(s.dir)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// login is how a test connects with its own client, never through the
// scripts: over TCP (account root@'%') or the socket (root@'localhost').
type login struct {
	user     string
	password string
	socket   bool
}

var rootTCP = login{user: "root", password: rootPassword}

// query runs sql as l and returns the output rows, tab-separated, or the
// client's error. MYSQL_PWD keeps the tests independent of the option-file
// quoting the scripts use.
func (s *server) query(l login, sql string) (string, error) {
	args := []string{"--no-defaults", "--batch", "--skip-column-names", "--default-character-set=utf8mb4", "-u" + l.user}
	if l.socket {
		args = append(args, "--socket="+s.socket)
	} else {
		args = append(args, "--protocol=TCP", "-h127.0.0.1", "-P"+strconv.Itoa(s.port))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.client, args...)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+l.password)
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// mustQuery is query as root over TCP, failing t on error.
func (s *server) mustQuery(t *testing.T, sql string) string {
	t.Helper()
	out, err := s.query(rootTCP, sql)
	if err != nil {
		t.Fatalf("SQL %q: %v", sql, err)
	}
	return out
}
