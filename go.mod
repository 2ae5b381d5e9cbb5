module github.com/fulcrum-lb/fulcrum

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	go.etcd.io/bbolt v1.5.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sys v0.45.0 // indirect
)
