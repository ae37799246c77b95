// Command registry serves an OCI distribution registry on a local address,
// with go-containerregistry's implementation: scripts/olm.sh pushes the
// operator, bundle and catalog images to it, and the real node's containerd
// pulls them from it as a mirror of their registry (ghcr.io), as a cluster
// in a disconnected network pulls from its mirror. Blobs are kept in a
// directory; manifests and tags in memory, so they last as long as the
// process, which scripts/olm.sh starts and stops with OLM.
//
// Usage:
//
//	registry --addr 127.0.0.1:5000 --dir DIR
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:5000", "address to listen on (keep it on the loopback: the registry has no authentication)")
	dir := flag.String("dir", "", "directory for the blobs (required)")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: registry --addr HOST:PORT --dir DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}
	logger := log.New(os.Stderr, "registry: ", log.LstdFlags)
	srv := &http.Server{
		Addr:              *addr,
		Handler:           registry.New(registry.Logger(logger), registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	logger.Printf("serving on %s, blobs in %s", *addr, *dir)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Fatal(err)
	}
}
