package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run writes history to a file and checks it: the exit status, stdout
// and the visualization's path.
func run(t *testing.T, history string) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(path, []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	html := path + ".html"
	status := check(path, html, 10*time.Second, &stdout, &stderr)
	t.Logf("status %d; stdout: %s; stderr: %s", status, stdout.String(), stderr.String())
	return status, stdout.String(), html
}

// Two clients, concurrent puts and reads; an indeterminate put that took
// effect (its value is read) and one that did not.
const linearizable = `# a comment
{"process":0,"op":"put","key":"x","value":"a","call":0,"return":10}
{"process":1,"op":"get","key":"x","value":"a","call":5,"return":15}
{"process":1,"op":"get","key":"y","value":null,"call":16,"return":18}
{"process":0,"op":"put","key":"x","value":"b","call":20,"return":null,"error":"timeout"}
{"process":2,"op":"get","key":"x","value":"a","call":30,"return":40}
{"process":2,"op":"get","key":"x","value":"b","call":41,"return":50}
{"process":3,"op":"put","key":"y","value":"c","call":30,"return":null,"error":"connection closed"}
{"process":1,"op":"get","key":"y","value":null,"call":60,"return":70,"node":2}
`

func TestAcceptsALinearizableHistory(t *testing.T) {
	status, stdout, html := run(t, linearizable)
	if status != 0 || !strings.HasPrefix(stdout, "Ok:") {
		t.Fatalf("status %d, %q: want 0, Ok", status, stdout)
	}
	if _, err := os.Stat(html); err == nil {
		t.Fatal("a visualization was written for a linearizable history")
	}
}

// A read that returns the value an acknowledged write replaced, after that
// write was acknowledged: a stale read.
const staleRead = `{"process":0,"op":"put","key":"x","value":"a","call":0,"return":10}
{"process":0,"op":"put","key":"x","value":"b","call":20,"return":30}
{"process":1,"op":"get","key":"x","value":"a","call":40,"return":50}
{"process":1,"op":"get","key":"z","value":null,"call":40,"return":50}
`

func TestRejectsAStaleRead(t *testing.T) {
	status, stdout, html := run(t, staleRead)
	if status != 1 || !strings.HasPrefix(stdout, "Illegal:") || !strings.Contains(stdout, "keys: x\n") {
		t.Fatalf("status %d, %q: want 1, Illegal on key x", status, stdout)
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Fatalf("no visualization at %s: %v", html, err)
	}
}

// A read of a value no put wrote, and a read that saw a write take effect
// then un-take effect, are violations too.
func TestRejectsPhantomAndFlickeringReads(t *testing.T) {
	for _, history := range []string{
		`{"process":0,"op":"get","key":"x","value":"never","call":0,"return":1}`,
		`{"process":0,"op":"put","key":"x","value":"a","call":0,"return":null}
{"process":1,"op":"get","key":"x","value":"a","call":10,"return":11}
{"process":1,"op":"get","key":"x","value":null,"call":12,"return":13}`,
	} {
		if status, stdout, _ := run(t, history); status != 1 {
			t.Fatalf("status %d, %q: want 1", status, stdout)
		}
	}
}

func TestRefusesBadInput(t *testing.T) {
	for _, history := range []string{
		`not json`,
		`{"process":0,"op":"get","key":"x","value":"a","call":0,"return":null}`,
		`{"process":0,"op":"put","key":"x","value":null,"call":0,"return":1}`,
		`{"process":0,"op":"cas","key":"x","value":"a","call":0,"return":1}`,
		`{"process":0,"op":"get","key":"x","value":"a","call":5,"return":1}`,
		`{"op":"get","key":"x","value":"a","call":0,"return":1}`,
		`{"process":0,"op":"get","key":"x","value":"a","call":0,"return":1,"extra":1}`,
	} {
		if status, _, _ := run(t, history); status != 2 {
			t.Fatalf("%s: status %d, want 2", history, status)
		}
	}
}
