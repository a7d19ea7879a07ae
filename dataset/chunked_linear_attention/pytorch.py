"""chunked_linear_attention as a PyTorch user writes it: Mamba-2's minimal SSD program
(ssd_minimal_discrete of the Mamba-2 paper's reference code, the chunked form in plain torch ops,
vectorised over chunks), in fp32, with this task's names: X = v, B = k, C = q, A = a, the state
[key dim, value dim]. Measured as the targets torch_eager and torch_compile.

Per chunk of 64 steps: the intra-chunk term einsum(q, k, L, v) with L = exp(segsum(a)) (the decayed
causal mask), each chunk's local state einsum(k, exp(A_last - A), v), the states passed between
chunks through exp(segsum) of the chunk totals (a [chunks+1, chunks+1] decay matrix, so no Python
loop over chunks: one graph for torch.compile at every length), and the inter-chunk term
einsum(q, state, exp(A)). S is padded to a multiple of 64 with a = 0 and q = k = v = 0, which leave
the state unchanged."""
import torch
import torch.nn.functional as F

CHUNK = 64


def segsum(x):
    """x [..., T] -> [..., T, T]: out[i, j] = x[j+1] + ... + x[i] for j <= i, -inf above."""
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    x = x.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=-1), 0)
    x = torch.cumsum(x, dim=-2)
    return x.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=0), -torch.inf)


def run(q, k, v, a, o, final_state):
    B, S, H, D = q.shape
    pad = (-S) % CHUNK
    n = (S + pad) // CHUNK
    # [B, S, H, D] -> [B, n, CHUNK, H, D] in fp32; a [B, H, S] -> [B, H, n, CHUNK]
    C_, B_, X = (F.pad(t.float(), (0, 0, 0, 0, 0, pad)).view(B, n, CHUNK, H, D) for t in (q, k, v))
    A = F.pad(a, (0, pad)).view(B, H, n, CHUNK)
    A_cumsum = torch.cumsum(A, dim=-1)
    # 1. intra-chunk (diagonal blocks)
    L = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C_, B_, L, X)
    # 2. each chunk's local state (decayed to the chunk's end)
    decay_states = torch.exp(A_cumsum[..., -1:] - A_cumsum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B_, decay_states, X)
    # 3. states passed between chunks
    states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[..., -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states, last = new_states[:, :-1], new_states[:, -1]
    # 4. inter-chunk term from each chunk's starting state
    Y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C_, states, torch.exp(A_cumsum))
    o.copy_((Y_diag + Y_off).reshape(B, n * CHUNK, H, D)[:, :S])
    final_state.copy_(last.transpose(-1, -2))  # [B, H, p, n] -> [B, H, key dim, value dim]
