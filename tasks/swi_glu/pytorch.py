# SwiGlu as a PyTorch user writes it: the reference arm of `temper judge --reference torch`
# (the task's golden is golden.cpp; this is what a kernel is compared with in practice).
import torch


def swi_glu(input: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x0, x1 = torch.chunk(input, 2, dim=dim)
    return torch.nn.functional.silu(x0) * x1
