// AXI4-Lite master of the labrunner UART bridge: one transaction at a time,
// started by a one-cycle request while ready is high, finished by a
// one-cycle done pulse with the slave's response or a timeout.
//
// AXI forbids withdrawing VALID before its handshake, so a transaction that
// times out is not abandoned: the master keeps it going in the background
// (VALID held, the response accepted and discarded when it comes) and
// reports done with timeout set at once. ready stays low until the late
// transaction has finished; the bridge answers BUSY meanwhile.
`default_nettype none

module lbrb_axil_master #(
    // Cycles from the request to done with timeout set; 0 waits forever.
    parameter integer TIMEOUT_CYCLES = 100_000
) (
    input  wire        clk,
    input  wire        rst,            // synchronous, active high

    input  wire        req,            // start a transaction (only while ready)
    input  wire        req_write,
    input  wire [31:0] req_addr,
    input  wire [31:0] req_wdata,
    output wire        ready,          // idle: no transaction, late or not
    output reg         done,           // one-cycle pulse
    output reg         done_timeout,   // with done: the slave did not answer in time
    output reg  [1:0]  done_resp,      // with done and not timeout: BRESP or RRESP
    output reg  [31:0] done_rdata,     // with done of a read

    output reg  [31:0] m_axi_awaddr,
    output wire [2:0]  m_axi_awprot,
    output reg         m_axi_awvalid,
    input  wire        m_axi_awready,
    output reg  [31:0] m_axi_wdata,
    output wire [3:0]  m_axi_wstrb,
    output reg         m_axi_wvalid,
    input  wire        m_axi_wready,
    input  wire [1:0]  m_axi_bresp,
    input  wire        m_axi_bvalid,
    output wire        m_axi_bready,
    output reg  [31:0] m_axi_araddr,
    output wire [2:0]  m_axi_arprot,
    output reg         m_axi_arvalid,
    input  wire        m_axi_arready,
    input  wire [31:0] m_axi_rdata,
    input  wire [1:0]  m_axi_rresp,
    input  wire        m_axi_rvalid,
    output wire        m_axi_rready
);
    localparam integer TW = (TIMEOUT_CYCLES > 1) ? $clog2(TIMEOUT_CYCLES + 1) : 1;
    localparam integer TLAST_I = (TIMEOUT_CYCLES > 0) ? TIMEOUT_CYCLES - 1 : 0;
    localparam [TW-1:0] TLAST = TLAST_I[TW-1:0];

    localparam [1:0] IDLE = 2'd0, WRITE = 2'd1, READ = 2'd2;

    reg [1:0]    state;
    reg          late;             // timed out: finish quietly
    reg [TW-1:0] timer;

    assign ready        = (state == IDLE);
    assign m_axi_awprot = 3'b000;  // unprivileged, secure, data
    assign m_axi_arprot = 3'b000;
    assign m_axi_wstrb  = 4'hF;    // the bridge moves whole 32-bit words
    assign m_axi_bready = (state == WRITE);
    assign m_axi_rready = (state == READ);

    wire expire = (TIMEOUT_CYCLES > 0) && !late && (timer == TLAST);

    always @(posedge clk) begin
        done         <= 1'b0;
        done_timeout <= 1'b0;
        if (rst) begin
            state         <= IDLE;
            late          <= 1'b0;
            timer         <= {TW{1'b0}};
            done_resp     <= 2'b00;
            done_rdata    <= 32'h0;
            m_axi_awaddr  <= 32'h0;
            m_axi_awvalid <= 1'b0;
            m_axi_wdata   <= 32'h0;
            m_axi_wvalid  <= 1'b0;
            m_axi_araddr  <= 32'h0;
            m_axi_arvalid <= 1'b0;
        end else begin
            if (state != IDLE && !late) timer <= timer + 1'b1;
            if (state != IDLE && expire) begin
                late         <= 1'b1;
                done         <= 1'b1;
                done_timeout <= 1'b1;
            end
            case (state)
                IDLE: begin
                    late  <= 1'b0;
                    timer <= {TW{1'b0}};
                    if (req) begin
                        if (req_write) begin
                            state         <= WRITE;
                            m_axi_awaddr  <= req_addr;
                            m_axi_awvalid <= 1'b1;
                            m_axi_wdata   <= req_wdata;
                            m_axi_wvalid  <= 1'b1;
                        end else begin
                            state         <= READ;
                            m_axi_araddr  <= req_addr;
                            m_axi_arvalid <= 1'b1;
                        end
                    end
                end
                WRITE: begin
                    if (m_axi_awready) m_axi_awvalid <= 1'b0;
                    if (m_axi_wready)  m_axi_wvalid  <= 1'b0;
                    if (m_axi_bvalid) begin
                        state <= IDLE;
                        if (!late && !expire) begin
                            done      <= 1'b1;
                            done_resp <= m_axi_bresp;
                        end
                    end
                end
                default: begin // READ
                    if (m_axi_arready) m_axi_arvalid <= 1'b0;
                    if (m_axi_rvalid) begin
                        state <= IDLE;
                        if (!late && !expire) begin
                            done       <= 1'b1;
                            done_resp  <= m_axi_rresp;
                            done_rdata <= m_axi_rdata;
                        end
                    end
                end
            endcase
        end
    end
endmodule

`default_nettype wire
