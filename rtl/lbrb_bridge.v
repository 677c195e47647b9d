// labrunner UART bridge, device side (docs/uart-bridge.md, wire format
// version 1): a UART receiver and transmitter, the frame engine
// (lbrb_bridge_core) and an AXI4-Lite master. Drop it into a design, connect
// the UART pins and the master port to the design's AXI4-Lite interconnect
// (or straight to one register block), and labrunner reads and writes the
// design's registers over the serial line.
//
// One clock, one synchronous active-low reset (the AXI aresetn convention).
// The UART input is synchronised inside; the output is a register.
`default_nettype none

module lbrb_bridge #(
    parameter integer CLK_HZ    = 100_000_000,  // clk frequency
    parameter integer BAUD      = 921_600,      // line rate; CLK_HZ / BAUD >= 4 (16 or more for a real line)
    parameter [31:0]  DEVICE_ID = 32'h0000_0000,// INFO word 3: fixed per board
    parameter integer MAX_COUNT = 256,          // largest burst, 2..256; INFO word 2
    // A partial frame is dropped after this many cycles without a byte (100 ms).
    parameter integer PARTIAL_TIMEOUT_CYCLES = CLK_HZ / 10,
    // A bus access not answered within this many cycles is a BUS_ERROR (1 ms).
    parameter integer BUS_TIMEOUT_CYCLES = CLK_HZ / 1000,
    // An AXI SLVERR (the slave was reached and refused) is REFUSED, a DECERR
    // (nothing at the address) BUS_ERROR. With 1, SLVERR on a write is
    // READ_ONLY instead: for slaves that answer SLVERR to a write only when
    // the register is read-only (lbrb_example_regs).
    parameter integer SLVERR_WRITE_IS_READ_ONLY = 0
) (
    input  wire        clk,
    input  wire        rst_n,          // synchronous, active low

    input  wire        uart_rxd,       // from the host's TX
    output wire        uart_txd,       // to the host's RX

    // High while the design cannot execute register accesses (being
    // reconfigured, a clock not locked, a soft reset in progress): requests
    // are answered BUSY and not executed. Tie low if there is no such state.
    input  wire        busy,

    output wire [31:0] m_axi_awaddr,
    output wire [2:0]  m_axi_awprot,
    output wire        m_axi_awvalid,
    input  wire        m_axi_awready,
    output wire [31:0] m_axi_wdata,
    output wire [3:0]  m_axi_wstrb,
    output wire        m_axi_wvalid,
    input  wire        m_axi_wready,
    input  wire [1:0]  m_axi_bresp,
    input  wire        m_axi_bvalid,
    output wire        m_axi_bready,
    output wire [31:0] m_axi_araddr,
    output wire [2:0]  m_axi_arprot,
    output wire        m_axi_arvalid,
    input  wire        m_axi_arready,
    input  wire [31:0] m_axi_rdata,
    input  wire [1:0]  m_axi_rresp,
    input  wire        m_axi_rvalid,
    output wire        m_axi_rready,

    // One-cycle event pulses (requests executed, replays, BUSY answers,
    // candidate frames dropped, bytes lost to a full receive buffer), for
    // counters the design may expose; leave unconnected otherwise.
    output wire [4:0]  events
);
    localparam integer CLKS_PER_BIT = (CLK_HZ + BAUD / 2) / BAUD;

    // The reset, registered: one flip-flop drives every reset input (and
    // synthesis keeps it active high, as the FPGA's flip-flops want it).
    reg rst = 1'b1;
    always @(posedge clk) rst <= ~rst_n;

    wire       rx_valid;
    wire [7:0] rx_data;
    wire       rx_frame_err;
    wire       tx_valid;
    wire [7:0] tx_data;
    wire       tx_ready;

    lbrb_uart_rx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_rx (
        .clk(clk), .rst(rst), .rxd(uart_rxd),
        .valid(rx_valid), .data(rx_data), .frame_err(rx_frame_err)
    );

    lbrb_uart_tx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_tx (
        .clk(clk), .rst(rst), .valid(tx_valid), .data(tx_data), .ready(tx_ready), .txd(uart_txd)
    );

    wire        bus_req, bus_write, bus_ready, bus_done, bus_timeout;
    wire [31:0] bus_addr, bus_wdata, bus_rdata;
    wire [1:0]  bus_resp;

    lbrb_bridge_core #(
        .DEVICE_ID(DEVICE_ID),
        .MAX_COUNT(MAX_COUNT),
        .PARTIAL_TIMEOUT_CYCLES(PARTIAL_TIMEOUT_CYCLES),
        .SLVERR_WRITE_IS_READ_ONLY(SLVERR_WRITE_IS_READ_ONLY)
    ) u_core (
        .clk(clk), .rst(rst),
        .rx_valid(rx_valid), .rx_data(rx_data),
        .tx_valid(tx_valid), .tx_data(tx_data), .tx_ready(tx_ready),
        .busy(busy),
        .bus_req(bus_req), .bus_write(bus_write), .bus_addr(bus_addr), .bus_wdata(bus_wdata),
        .bus_ready(bus_ready), .bus_done(bus_done), .bus_timeout(bus_timeout),
        .bus_resp(bus_resp), .bus_rdata(bus_rdata),
        .ev_request(events[0]), .ev_replay(events[1]), .ev_busy(events[2]),
        .ev_reject(events[3]), .ev_overrun(events[4])
    );

    lbrb_axil_master #(.TIMEOUT_CYCLES(BUS_TIMEOUT_CYCLES)) u_master (
        .clk(clk), .rst(rst),
        .req(bus_req), .req_write(bus_write), .req_addr(bus_addr), .req_wdata(bus_wdata),
        .ready(bus_ready), .done(bus_done), .done_timeout(bus_timeout),
        .done_resp(bus_resp), .done_rdata(bus_rdata),
        .m_axi_awaddr(m_axi_awaddr), .m_axi_awprot(m_axi_awprot), .m_axi_awvalid(m_axi_awvalid),
        .m_axi_awready(m_axi_awready), .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb),
        .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready), .m_axi_bresp(m_axi_bresp),
        .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready), .m_axi_araddr(m_axi_araddr),
        .m_axi_arprot(m_axi_arprot), .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready),
        .m_axi_rdata(m_axi_rdata), .m_axi_rresp(m_axi_rresp), .m_axi_rvalid(m_axi_rvalid),
        .m_axi_rready(m_axi_rready)
    );

    // A framing error drops the byte; the frame it belonged to fails its
    // CRC or its header check and the host retries.
    wire unused_ok = rx_frame_err;
endmodule

`default_nettype wire
