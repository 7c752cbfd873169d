! Fortran through both MPIs' Fortran bindings (include 'mpif.h', as the NAS
! benchmarks do): a blocking ring with MPI_ANY_SOURCE and a real status,
! Irecv/Isend/Waitall with MPI_STATUSES_IGNORE, MPI_IN_PLACE Allreduce,
! Comm_split with collectives on it, Waitany, persistent requests,
! Alltoallv, MPI_PROC_NULL. Logs every call to $APPLOG_DIR/rank-N.log.
! Argument 1: how many times the persistent requests are started, each
! time after some computation (default 3; the prediction benchmark runs
! it longer).
program fortran_mix
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, nxt, prv, it, k, idx, color, sub, srank, ssize
  integer :: req(4), preq(2), status(MPI_STATUS_SIZE)
  integer :: sc(64), rc(64), sd(64), rd(64)
  double precision :: a(64), b(64), x, total
  character(len=4096) :: dir
  character(len=64) :: line
  integer :: lu, dlen, niter, alen
  character(len=32) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  lu = 0
  call get_environment_variable('APPLOG_DIR', dir, dlen)
  if (dlen > 0) then
    lu = 17
    write(line, '(a,i0,a)') '/rank-', rank, '.log'
    open(unit=lu, file=trim(dir)//trim(line), status='replace', action='write')
  end if
  call log0('MPI_Init')
  niter = 0
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg, alen)
    read(arg, *, iostat=ierr) niter
  end if
  if (niter <= 0) niter = 3
  nxt = mod(rank + 1, nprocs)
  prv = mod(rank + nprocs - 1, nprocs)
  a = rank
  x = 0

  ! blocking ring; rank 0 receives with MPI_ANY_SOURCE and a status
  do it = 1, 3
    if (rank == 0) then
      call MPI_Send(a, 4, MPI_DOUBLE_PRECISION, nxt, it, MPI_COMM_WORLD, ierr)
      call logp('MPI_Send', nxt, it, 4, 32)
      call MPI_Recv(b, 4, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, it, MPI_COMM_WORLD, status, ierr)
      call logp('MPI_Recv', status(MPI_SOURCE), it, 4, 32)
    else
      call MPI_Recv(b, 4, MPI_DOUBLE_PRECISION, prv, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call logp('MPI_Recv', prv, it, 4, 32)
      call MPI_Send(b, 4, MPI_DOUBLE_PRECISION, nxt, it, MPI_COMM_WORLD, ierr)
      ! sends what it has just received: a forwarded send
      if (lu /= 0) write(lu, '(a,i0,a,i0,a)') 'MPI_Send peer=', nxt, ' tag=', it, &
          ' count=4 bytes=32 comm=world forwards=1'
    end if
    x = x + b(1)
  end do

  ! non-blocking exchange, statuses ignored
  do it = 1, 3
    call MPI_Irecv(b, 8, MPI_DOUBLE_PRECISION, prv, 10 + it, MPI_COMM_WORLD, req(1), ierr)
    call logr('MPI_Irecv', prv, 10 + it, 8, 64, 'nr', it)
    call MPI_Isend(a, 8, MPI_DOUBLE_PRECISION, nxt, 10 + it, MPI_COMM_WORLD, req(2), ierr)
    call logr('MPI_Isend', nxt, 10 + it, 8, 64, 'ns', it)
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
    if (lu /= 0) write(lu, '(a,i0,a,i0)') 'MPI_Waitall completed=nr', it, ',ns', it
    x = x + b(2)
  end do

  ! wildcard Irecv completed by Waitany: the matched source must be traced
  call MPI_Irecv(b, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, req(1), ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Irecv tag=20 count=1 bytes=8 comm=world request=wr any_source=1'
  call MPI_Send(a, 1, MPI_DOUBLE_PRECISION, nxt, 20, MPI_COMM_WORLD, ierr)
  call logp('MPI_Send', nxt, 20, 1, 8)
  call MPI_Waitany(1, req, idx, status, ierr)
  if (lu /= 0) write(lu, '(a,i0)') 'MPI_Waitany completed=wr sources=', status(MPI_SOURCE)

  ! MPI_PROC_NULL receive
  call MPI_Recv(b, 2, MPI_DOUBLE_PRECISION, MPI_PROC_NULL, 0, MPI_COMM_WORLD, status, ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Recv peer=null tag=0 count=2 bytes=16 comm=world'

  ! MPI_IN_PLACE allreduce on the world
  b(1:3) = rank
  call MPI_Allreduce(MPI_IN_PLACE, b, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Allreduce count=3 bytes=24 comm=world'
  x = x + b(1)

  ! split into even / odd; collectives on the sub-communicator
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, rank, sub, ierr)
  if (lu /= 0) write(lu, '(a,i0,a,i0)') 'MPI_Comm_split comm=world new_comm=sub color=', color, ' key=', rank
  call MPI_Comm_rank(sub, srank, ierr)
  call MPI_Comm_size(sub, ssize, ierr)
  call MPI_Bcast(a, 6, MPI_DOUBLE_PRECISION, 0, sub, ierr)
  if (lu /= 0) write(lu, '(a,i0,a)') 'MPI_Bcast root=', color, ' count=6 bytes=48 comm=sub'
  call MPI_Reduce(a, b, 2, MPI_DOUBLE_PRECISION, MPI_MAX, 0, sub, ierr)
  if (lu /= 0) write(lu, '(a,i0,a)') 'MPI_Reduce root=', color, ' count=2 bytes=16 comm=sub'
  call MPI_Barrier(sub, ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Barrier comm=sub'
  call MPI_Comm_free(sub, ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Comm_free comm=sub'

  ! persistent requests
  call MPI_Recv_init(b, 5, MPI_DOUBLE_PRECISION, prv, 30, MPI_COMM_WORLD, preq(1), ierr)
  call logr('MPI_Recv_init', prv, 30, 5, 40, 'pr', 0)
  call MPI_Send_init(a, 5, MPI_DOUBLE_PRECISION, nxt, 30, MPI_COMM_WORLD, preq(2), ierr)
  call logr('MPI_Send_init', nxt, 30, 5, 40, 'ps', 0)
  do it = 1, niter
    do k = 1, 300000
      x = x + 1d0 / (dble(k) * dble(k))
    end do
    call MPI_Startall(2, preq, ierr)
    if (lu /= 0) write(lu, '(a)') 'MPI_Startall reqs=pr0,ps0'
    call MPI_Waitall(2, preq, MPI_STATUSES_IGNORE, ierr)
    if (lu /= 0) write(lu, '(a)') 'MPI_Waitall completed=pr0,ps0'
  end do
  call MPI_Request_free(preq(1), ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Request_free reqs=pr0'
  call MPI_Request_free(preq(2), ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Request_free reqs=ps0'

  ! alltoallv with uneven counts: rank r sends r+j+1 doubles to j
  do k = 1, nprocs
    sc(k) = rank + k
    rc(k) = rank + k
  end do
  sd(1) = 0
  rd(1) = 0
  do k = 2, nprocs
    sd(k) = sd(k-1) + sc(k-1)
    rd(k) = rd(k-1) + rc(k-1)
  end do
  a = 1
  call MPI_Alltoallv(a, sc, sd, MPI_DOUBLE_PRECISION, b, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (lu /= 0) then
    write(lu, '(a)', advance='no') 'MPI_Alltoallv comm=world counts='
    do k = 1, nprocs
      if (k > 1) write(lu, '(a)', advance='no') ','
      write(lu, '(i0)', advance='no') sc(k)
    end do
    write(lu, '(a)') ''
  end if

  call MPI_Allreduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (lu /= 0) write(lu, '(a)') 'MPI_Allreduce count=1 bytes=8 comm=world'
  if (rank == 0) write(*, '(a,f12.3)') 'fortran_mix: checksum', total
  call log0('MPI_Finalize')
  if (lu /= 0) close(lu)
  call MPI_Finalize(ierr)

contains
  subroutine log0(name)
    character(len=*), intent(in) :: name
    if (lu /= 0) write(lu, '(a)') name
  end subroutine
  subroutine logp(name, peer, tag, count, bytes)
    character(len=*), intent(in) :: name
    integer, intent(in) :: peer, tag, count, bytes
    if (lu /= 0) write(lu, '(a,a,i0,a,i0,a,i0,a,i0,a)') name, ' peer=', peer, ' tag=', tag, ' count=', count, &
        ' bytes=', bytes, ' comm=world'
  end subroutine
  subroutine logr(name, peer, tag, count, bytes, lab, n)
    character(len=*), intent(in) :: name, lab
    integer, intent(in) :: peer, tag, count, bytes, n
    if (lu /= 0) write(lu, '(a,a,i0,a,i0,a,i0,a,i0,a,a,i0)') name, ' peer=', peer, ' tag=', tag, ' count=', count, &
        ' bytes=', bytes, ' comm=world request=', lab, n
  end subroutine
end program
