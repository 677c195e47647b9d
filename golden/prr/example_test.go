package prr_test

import (
	"fmt"

	"github.com/labrunner/labrunner/golden/prr"
)

// A 4-port switch takes a batch: packets for port 1 go to consecutive queues
// of FIFO group 1, starting at the port's offset counter.
func ExampleSwitch_Insert() {
	s, err := prr.NewSwitch(4, 8)
	if err != nil {
		panic(err)
	}
	batch := []prr.Packet{
		{Valid: true, Dest: 1, Data: 0xA},
		{Valid: false},
		{Valid: true, Dest: 1, Data: 0xB},
		{Valid: true, Dest: 0, Data: 0xC},
	}
	placements, drops := s.Insert(batch)
	for _, p := range placements {
		fmt.Printf("input %d -> group %d queue %d (data %X)\n", p.Input, p.Dest, p.Queue, p.Data)
	}
	fmt.Println("dropped:", len(drops))
	for _, d := range s.Dequeue() {
		fmt.Printf("port %d sends %X from queue %d\n", d.Output, d.Data, d.Queue)
	}
	// Output:
	// input 3 -> group 0 queue 0 (data C)
	// input 0 -> group 1 queue 0 (data A)
	// input 2 -> group 1 queue 1 (data B)
	// dropped: 0
	// port 0 sends C from queue 0
	// port 1 sends A from queue 0
}
