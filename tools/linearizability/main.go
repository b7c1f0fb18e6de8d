// Command linearizability checks a recorded history of a key-value
// register workload for linearizability with Porcupine
// (github.com/anishathalye/porcupine v1.3.1, vendored), and exits 0 only if
// it is linearizable.
//
// Usage:
//
//	linearizability [-timeout 120s] [-html FILE] HISTORY
//
// The history (packetstore-cli/tests/partitions.rs records it) is JSON
// lines, one operation a line; blank lines and lines starting with '#'
// are ignored. Fields:
//
//   - process: the client's logical process (an integer >= 0); a client
//     whose operation is left indeterminate goes on as a new process, so
//     one process's operations never overlap.
//   - op: "get" (read the key) or "put" (SET the key to value).
//   - key: the register.
//   - value: for a put, the value written (every put's value is unique);
//     for a get, the value read, null for a key that does not exist.
//   - call, return: monotonic timestamps (nanoseconds) of the request's
//     send and the reply's arrival. "return": null marks a put whose
//     outcome is unknown (an error, a timeout, a closed connection: it may
//     or may not have taken effect); it is treated as returning after
//     every other event of the history. A get has a return (a failed read
//     is not recorded).
//   - node, error: optional, shown in the visualization only.
//
// For example:
//
//	{"process":3,"op":"put","key":"k1","value":"p3-17","call":1200,"return":5400,"node":2}
//	{"process":1,"op":"get","key":"k1","value":null,"call":1300,"return":1900}
//	{"process":4,"op":"put","key":"k2","value":"p4-2","call":2000,"return":null,"error":"timeout"}
//
// Each key is a register checked on its own (Porcupine's partitioning).
// The verdict is printed on stdout. Exit status: 0 linearizable (Ok);
// 1 not linearizable (Illegal): a visualization is written to
// HISTORY.html (or -html FILE) and the keys that fail are printed;
// 2 unknown (the check timed out) or bad input.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// record is one line of a history file.
type record struct {
	Process *int    `json:"process"`
	Op      string  `json:"op"`
	Key     *string `json:"key"`
	Value   *string `json:"value"`
	Call    *int64  `json:"call"`
	Return  *int64  `json:"return"`
	Node    int     `json:"node,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// kvInput is an operation's request.
type kvInput struct {
	Put   bool
	Key   string
	Value string
}

// kvOutput is an operation's reply: for a get, the value read (Nil for a
// missing key); for a put whose outcome is unknown, Unknown.
type kvOutput struct {
	Value   string
	Nil     bool
	Unknown bool
}

// register is a key's state: comparable with ==, as Porcupine's cache
// needs.
type register struct {
	Set   bool
	Value string
}

// metadata is shown in the visualization only.
type metadata struct {
	Node  int
	Error string
	Line  int
}

// kvModel is a map of independent registers, partitioned by key.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			key := op.Input.(kvInput).Key
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], op)
		}
		sort.Strings(keys)
		partitions := make([][]porcupine.Operation, 0, len(keys))
		for _, key := range keys {
			partitions = append(partitions, byKey[key])
		}
		return partitions
	},
	Init: func() interface{} { return register{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st := state.(register)
		in := input.(kvInput)
		out := output.(kvOutput)
		if in.Put {
			return true, register{Set: true, Value: in.Value}
		}
		if out.Nil {
			return !st.Set, st
		}
		return st.Set && st.Value == out.Value, st
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(kvInput)
		out := output.(kvOutput)
		switch {
		case in.Put && out.Unknown:
			return fmt.Sprintf("put(%q, %q) -> ?", in.Key, in.Value)
		case in.Put:
			return fmt.Sprintf("put(%q, %q)", in.Key, in.Value)
		case out.Nil:
			return fmt.Sprintf("get(%q) -> nil", in.Key)
		default:
			return fmt.Sprintf("get(%q) -> %q", in.Key, out.Value)
		}
	},
	DescribeState: func(state interface{}) string {
		st := state.(register)
		if !st.Set {
			return "nil"
		}
		return fmt.Sprintf("%q", st.Value)
	},
	DescribeOperationMetadata: func(info interface{}) string {
		m, ok := info.(metadata)
		if !ok {
			return ""
		}
		text := fmt.Sprintf("line %d, node %d", m.Line, m.Node)
		if m.Error != "" {
			text += ", " + m.Error
		}
		return text
	},
}

// summary counts a history's operations.
type summary struct {
	Gets, Puts, Unknown, Keys int
}

func (s summary) String() string {
	return fmt.Sprintf("%d operations (%d gets, %d puts of which %d indeterminate) on %d keys",
		s.Gets+s.Puts, s.Gets, s.Puts, s.Unknown, s.Keys)
}

// parseRecord turns one line into an operation; an indeterminate put's
// return is left at -1 for parseHistory to fill in.
func parseRecord(line []byte, number int) (porcupine.Operation, error) {
	var r record
	decoder := json.NewDecoder(strings.NewReader(string(line)))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&r); err != nil {
		return porcupine.Operation{}, err
	}
	if r.Process == nil || *r.Process < 0 || r.Key == nil || r.Call == nil {
		return porcupine.Operation{}, errors.New("process (>= 0), key and call are required")
	}
	in := kvInput{Key: *r.Key}
	out := kvOutput{}
	switch r.Op {
	case "put":
		if r.Value == nil {
			return porcupine.Operation{}, errors.New("a put needs a value")
		}
		in.Put, in.Value = true, *r.Value
		out.Unknown = r.Return == nil
	case "get":
		if r.Return == nil {
			return porcupine.Operation{}, errors.New("a get needs a return (failed reads are not recorded)")
		}
		if r.Value == nil {
			out.Nil = true
		} else {
			out.Value = *r.Value
		}
	default:
		return porcupine.Operation{}, fmt.Errorf("op %q is neither get nor put", r.Op)
	}
	ret := int64(-1)
	if r.Return != nil {
		ret = *r.Return
		if ret < *r.Call {
			return porcupine.Operation{}, errors.New("return before call")
		}
	}
	return porcupine.Operation{
		ClientId: *r.Process,
		Input:    in,
		Call:     *r.Call,
		Output:   out,
		Return:   ret,
		Metadata: metadata{Node: r.Node, Error: r.Error, Line: number},
	}, nil
}

// parseHistory reads a history; indeterminate puts return after every
// other event.
func parseHistory(reader io.Reader) ([]porcupine.Operation, summary, error) {
	var history []porcupine.Operation
	var s summary
	keys := map[string]bool{}
	end := int64(0)
	scanner := bufio.NewScanner(reader)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for number := 1; scanner.Scan(); number++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, err := parseRecord([]byte(line), number)
		if err != nil {
			return nil, s, fmt.Errorf("line %d: %w", number, err)
		}
		in := op.Input.(kvInput)
		keys[in.Key] = true
		switch {
		case !in.Put:
			s.Gets++
		case op.Output.(kvOutput).Unknown:
			s.Puts++
			s.Unknown++
		default:
			s.Puts++
		}
		if op.Call > end {
			end = op.Call
		}
		if op.Return > end {
			end = op.Return
		}
		history = append(history, op)
	}
	if err := scanner.Err(); err != nil {
		return nil, s, err
	}
	for i := range history {
		if history[i].Return < 0 {
			history[i].Return = end + 1
		}
	}
	s.Keys = len(keys)
	return history, s, nil
}

// failingKeys names the keys whose own history is not linearizable.
func failingKeys(history []porcupine.Operation, timeout time.Duration) []string {
	var keys []string
	for _, partition := range kvModel.Partition(history) {
		if porcupine.CheckOperationsTimeout(kvModel, partition, timeout) == porcupine.Illegal {
			keys = append(keys, partition[0].Input.(kvInput).Key)
		}
	}
	return keys
}

// check runs the checker on the history file at path and returns the exit
// status.
func check(path, html string, timeout time.Duration, stdout, stderr io.Writer) int {
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "linearizability:", err)
		return 2
	}
	defer file.Close()
	history, s, err := parseHistory(file)
	if err != nil {
		fmt.Fprintf(stderr, "linearizability: %s: %v\n", path, err)
		return 2
	}
	started := time.Now()
	result, info := porcupine.CheckOperationsVerbose(kvModel, history, timeout)
	took := time.Since(started).Round(time.Millisecond)
	switch result {
	case porcupine.Ok:
		fmt.Fprintf(stdout, "Ok: %s: linearizable (checked in %v)\n", s, took)
		return 0
	case porcupine.Illegal:
		fmt.Fprintf(stdout, "Illegal: %s: NOT linearizable (checked in %v); keys: %s\n",
			s, took, strings.Join(failingKeys(history, timeout), " "))
		if err := porcupine.VisualizePath(kvModel, info, html); err != nil {
			fmt.Fprintln(stderr, "linearizability: visualization:", err)
		} else {
			fmt.Fprintln(stdout, "visualization:", html)
		}
		return 1
	default:
		fmt.Fprintf(stdout, "Unknown: %s: the check timed out after %v\n", s, took)
		return 2
	}
}

func main() {
	timeout := flag.Duration("timeout", 120*time.Second, "give up (verdict Unknown, exit 2) after this long")
	html := flag.String("html", "", "where to write the visualization of a violation (default: HISTORY.html)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: linearizability [-timeout D] [-html FILE] HISTORY")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	path := flag.Arg(0)
	if *html == "" {
		*html = path + ".html"
	}
	os.Exit(check(path, *html, *timeout, os.Stdout, os.Stderr))
}
