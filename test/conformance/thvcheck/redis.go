package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"

	"github.com/alicebob/miniredis/v2"
)

// serveRedis runs an in-memory Redis (miniredis, which ToolHive's own
// tests use) on a free loopback port until stdin closes, so the
// conformance suite can run the runner's Redis session storage and rate
// limiting without a Redis installation. With a password, clients must
// AUTH with it; with a certificate and key (PEM files), it speaks TLS
// only. It prints the address on the first line of stdout.
func serveRedis(password, certFile, keyFile string) error {
	s := miniredis.NewMiniRedis()
	if password != "" {
		s.RequireAuth(password)
	}
	var err error
	if certFile != "" {
		cert, lerr := tls.LoadX509KeyPair(certFile, keyFile)
		if lerr != nil {
			return lerr
		}
		err = s.StartTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	} else {
		err = s.Start()
	}
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println(s.Addr())
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}
