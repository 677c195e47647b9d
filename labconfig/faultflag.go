package labconfig

import (
	"fmt"
	"strings"
)

// ParseFault parses a fault given on the command line:
//
//	NAME                      a rack-wide fault
//	NAME@BOARD                a fault of one board
//	NAME@BOARD:PORT           a fault of one cable end
//	...,key=value,key=value   with parameters
//
// for example "credit-leak@exa-10:sfp0,every=32".
func ParseFault(s string) (Fault, error) {
	f := Fault{Pos: Pos{File: "--fault " + s}}
	head, rest, _ := strings.Cut(s, ",")
	name, target, hasTarget := strings.Cut(head, "@")
	f.Name = strings.TrimSpace(name)
	if f.Name == "" {
		return f, fmt.Errorf("--fault %q: no fault name (write NAME[@BOARD[:PORT]][,key=value...])", s)
	}
	if hasTarget {
		board, port, hasPort := strings.Cut(target, ":")
		if board == "" {
			return f, fmt.Errorf("--fault %q: empty board after @", s)
		}
		f.Board = board
		if hasPort {
			if port == "" {
				return f, fmt.Errorf("--fault %q: empty port after %s:", s, board)
			}
			f.Link = board + ":" + port
		}
	}
	if rest != "" {
		f.Params = Params{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return f, fmt.Errorf("--fault %q: parameter %q is not key=value", s, kv)
			}
			f.Params[k] = Param{Values: []string{strings.TrimSpace(v)}, Pos: f.Pos}
		}
	}
	return f, nil
}
