// Package e2e runs the workshop's exercises against a real cluster and the
// operators as users run them. See internal/cluster for the providers.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-workshops/workshop/tests/internal/cluster"
)

var (
	testEnv env.Environment
	suite   *cluster.Suite
)

func TestMain(m *testing.M) {
	var err error
	if suite, err = cluster.New(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testEnv = env.NewWithConfig(envconf.New())
	testEnv.Setup(suite.Setup("database", "gordon", "mysql-backup"))
	testEnv.Finish(suite.Finish())
	os.Exit(testEnv.Run(m))
}
