// The design "bridge-example": lbrb_bridge driving lbrb_example_regs. It is
// what the co-simulation runs (rtl/sim) and what a board would carry to let
// labrunner's register-level tests run over the UART bridge. The bridge
// answers BUSY while the register file's soft reset runs.
`default_nettype none

module lbrb_example_top #(
    parameter integer CLK_HZ    = 100_000_000,
    parameter integer BAUD      = 921_600,
    parameter [31:0]  DEVICE_ID = 32'h5A17_0001
) (
    input  wire clk,
    input  wire rst_n,      // synchronous, active low
    input  wire uart_rxd,
    output wire uart_txd
);
    wire [31:0] awaddr, wdata, araddr, rdata;
    wire [2:0]  awprot, arprot;
    wire [3:0]  wstrb;
    wire [1:0]  bresp, rresp;
    wire        awvalid, awready, wvalid, wready, bvalid, bready;
    wire        arvalid, arready, rvalid, rready;
    wire        busy;
    wire [4:0]  events;

    // The register file answers SLVERR to a write only for a read-only
    // register, and to a read only for a pop of the empty FIFO.
    lbrb_bridge #(.CLK_HZ(CLK_HZ), .BAUD(BAUD), .DEVICE_ID(DEVICE_ID), .SLVERR_WRITE_IS_READ_ONLY(1)) u_bridge (
        .clk(clk), .rst_n(rst_n), .uart_rxd(uart_rxd), .uart_txd(uart_txd), .busy(busy),
        .m_axi_awaddr(awaddr), .m_axi_awprot(awprot), .m_axi_awvalid(awvalid), .m_axi_awready(awready),
        .m_axi_wdata(wdata), .m_axi_wstrb(wstrb), .m_axi_wvalid(wvalid), .m_axi_wready(wready),
        .m_axi_bresp(bresp), .m_axi_bvalid(bvalid), .m_axi_bready(bready),
        .m_axi_araddr(araddr), .m_axi_arprot(arprot), .m_axi_arvalid(arvalid), .m_axi_arready(arready),
        .m_axi_rdata(rdata), .m_axi_rresp(rresp), .m_axi_rvalid(rvalid), .m_axi_rready(rready),
        .events(events)
    );

    lbrb_example_regs #(.CLK_HZ(CLK_HZ)) u_regs (
        .clk(clk), .rst_n(rst_n), .busy(busy),
        .s_axi_awaddr(awaddr), .s_axi_awprot(awprot), .s_axi_awvalid(awvalid), .s_axi_awready(awready),
        .s_axi_wdata(wdata), .s_axi_wstrb(wstrb), .s_axi_wvalid(wvalid), .s_axi_wready(wready),
        .s_axi_bresp(bresp), .s_axi_bvalid(bvalid), .s_axi_bready(bready),
        .s_axi_araddr(araddr), .s_axi_arprot(arprot), .s_axi_arvalid(arvalid), .s_axi_arready(arready),
        .s_axi_rdata(rdata), .s_axi_rresp(rresp), .s_axi_rvalid(rvalid), .s_axi_rready(rready)
    );

    wire unused_ok = &{1'b0, events};
endmodule

`default_nettype wire
