// Module etcd-3.2 pins etcd 3.2.13, the release the workshops run
// (quay.io/coreos/etcd:v3.2.13, docker.io/prgcont/etcd:v3.2.13), built from
// its own source: github.com/coreos/etcd at v3.2.13, a module with no go.mod
// of its own. Its dependencies are the versions of the release's glide.lock
// (as pseudo-versions of the same commits) where the module proxy serves
// them, and the nearest served tag otherwise: grpc v1.7.5, genproto, the
// prometheus client, ugorji's codec (the GenVersion 5 its generated code
// checks for), bbolt, cmux, cobra and pflag are the release's own. Go's
// minimal version selection may raise the others (x/net, protobuf); run no
// go mod tidy here: these modules have no go.mod, so tidy adds their tests'
// imports too, which pull today's grpc.
//
// ugorji's codec of 2017 builds a base64 alphabet with "_" twice, which
// Go 1.22 and later refuse at init (encoding alphabet includes duplicate
// symbols): scripts/build-tools.sh builds from a copy of that module with
// the second "_" made ".", an alphabet that only its code generator uses.

module github.com/operator-workshops/workshop/scripts/tools/etcd-3.2

go 1.26.0

tool (
	github.com/coreos/etcd
	github.com/coreos/etcd/etcdctl
)

require (
	github.com/cockroachdb/cmux v0.0.0-20160228191917-112f0506e774
	github.com/coreos/bbolt v1.3.1-coreos.6
	github.com/coreos/etcd v3.2.13+incompatible
	github.com/coreos/go-systemd v0.0.0-20161114122254-48702e0da86b
	github.com/coreos/pkg v0.0.0-20160727233714-3ac0863d7acf
	github.com/dustin/go-humanize v0.0.0-20151125214831-8929fe90cee4
	github.com/gogo/protobuf v1.0.0
	github.com/golang/protobuf v1.5.4
	github.com/google/btree v1.0.0
	github.com/grpc-ecosystem/go-grpc-prometheus v0.0.0-20160910222444-6b7015e65d36
	github.com/grpc-ecosystem/grpc-gateway v1.3.0
	github.com/jonboulle/clockwork v0.1.0
	github.com/prometheus/client_golang v0.8.0
	github.com/spf13/cobra v0.0.0-20151124153217-1c44ec8d3f15
	github.com/spf13/pflag v0.0.0-20151013200643-08b1a584251b
	github.com/ugorji/go v0.0.0-20170107133203-ded73eae5db7
	github.com/urfave/cli v1.18.0
	github.com/xiang90/probing v0.0.0-20160813154853-07dd2e8dfe18
	google.golang.org/genproto v0.0.0-20170731182057-09f6ed296fc6
	google.golang.org/grpc v1.7.5
	gopkg.in/cheggaaa/pb.v1 v1.0.2
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bgentry/speakeasy v0.2.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/cpuguy83/go-md2man v1.0.10 // indirect
	github.com/dgrijalva/jwt-go v3.2.0+incompatible // indirect
	github.com/ghodss/yaml v1.0.0 // indirect
	github.com/golang/groupcache v0.0.0-20241129210726-2c02b8208cf8 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-runewidth v0.0.9 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.4 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/olekukonko/tablewriter v0.0.5 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/prometheus/client_model v0.0.0-20150212101744-fa8ad6fec335 // indirect
	github.com/prometheus/common v0.0.0-20161201123508-195bde7883f7 // indirect
	github.com/prometheus/procfs v0.0.0-20161206222141-fcdb11ccb438 // indirect
	github.com/russross/blackfriday v1.5.2 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
