package shoal

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestScratch4(t *testing.T) {
	set := map[string]string{}
	for _, kv := range strings.Fields(os.Getenv("SET")) {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	es, err := Model{}.Predict(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		fmt.Printf("%-32s %-40s %-28s %s | %s\n", e.Metric, e.Params.String(), e.Describe(), e.Source, e.Note)
	}
}
