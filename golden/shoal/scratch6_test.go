package shoal

import (
	"fmt"
	"testing"
	"time"
)

func TestScratch6(t *testing.T) {
	c := Rack()
	w := NewWorkload(Uniform, 512, 100000, 0.5, 1)
	t0 := time.Now()
	s, err := RunWorkload(c, w, SimOptions{})
	fmt.Printf("%+v %v %v\n", s, err, time.Since(t0))
}
