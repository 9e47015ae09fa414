// Command compatdoc writes docs/compatibility.md's table of deliberate
// differences from the list the suites enforce (test/deliberate), or with
// -check fails if the page's table is not what it would write (make
// verify).
//
//	go run ./hack/compatdoc          # make docs-generate
//	go run ./hack/compatdoc -check   # make verify
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hivekeeper/hivekeeper/test/deliberate"
)

const page = "docs/compatibility.md"

func main() {
	check := flag.Bool("check", false, "fail if the page's table is not the generated one, instead of writing it")
	flag.Parse()
	b, err := os.ReadFile(page)
	if err != nil {
		fatalf("%v", err)
	}
	out, err := deliberate.Replace(string(b))
	if err != nil {
		fatalf("%s: %v", page, err)
	}
	switch {
	case out == string(b):
	case *check:
		fatalf("%s: its table of deliberate differences is not test/deliberate's: run make docs-generate (and edit test/deliberate, not the page)", page)
	default:
		if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
			fatalf("%v", err)
		}
		fmt.Println("wrote", page)
	}
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "compatdoc: "+format+"\n", a...)
	os.Exit(1)
}
