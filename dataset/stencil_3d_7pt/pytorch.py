"""stencil_3d_7pt as a PyTorch user writes it: slicing, one pass per step. The interior of the next
grid is c0 times the interior plus c1 times the sum of the six shifted interior views; the
boundary is whatever the grid held, copied once at the start (Dirichlet boundary). Measured as the
targets torch_eager and torch_compile."""


def run(u, out, c0, c1, T):
    cur = u.clone()
    nxt = u.clone()  # the boundary of both buffers holds u's boundary for good
    for _ in range(T):
        c = cur[1:-1, 1:-1, 1:-1]
        nxt[1:-1, 1:-1, 1:-1] = c0 * c + c1 * (cur[:-2, 1:-1, 1:-1] + cur[2:, 1:-1, 1:-1]
                                               + cur[1:-1, :-2, 1:-1] + cur[1:-1, 2:, 1:-1]
                                               + cur[1:-1, 1:-1, :-2] + cur[1:-1, 1:-1, 2:])
        cur, nxt = nxt, cur
    out.copy_(cur)
